ENVIRONMENT = {
    "gpu": "NVIDIA H100 80GB HBM3",
    "driver": "550.54.15",
    "cuda": "12.4",
    "torch": "2.3.0+cu121",
    "triton": "2.3.0",
}
