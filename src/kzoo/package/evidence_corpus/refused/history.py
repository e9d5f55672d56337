HISTORY = [
    {"commit": "a1b2c3d", "latency_us": 231.4, "speedup": 1.78},
    {"commit": "d4e5f6a", "latency_us": 164.2, "speedup": 2.51},
    {"commit": "0b1c2d3", "latency_us": 118.0, "speedup": 3.49},
]
