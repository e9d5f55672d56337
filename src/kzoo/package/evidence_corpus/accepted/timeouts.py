# Budgets for the local harness.
TIMEOUT_S = 30.0
WARMUP_MS = 25
REP_MS = 100
MAX_LATENCY_US = 500.0
POLL_INTERVAL_S = 0.05
