CFG = {
    "M=16,N=4096,K=4096": {"BLOCK_M": 16, "BLOCK_N": 128, "num_stages": 5},
    "M=32,N=4096,K=4096": {"BLOCK_M": 32, "BLOCK_N": 128, "num_stages": 5},
    "M=64,N=4096,K=4096": {"BLOCK_M": 64, "BLOCK_N": 128, "num_stages": 4},
    "M=128,N=4096,K=4096": {"BLOCK_M": 128, "BLOCK_N": 128, "num_stages": 4},
}
