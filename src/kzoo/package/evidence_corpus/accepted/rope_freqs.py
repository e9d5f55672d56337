import torch


def rope_frequencies(head_dim: int, seq_len: int, theta: float = 10000.0, device="cuda"):
    """cos/sin tables of rotary embeddings, computed at run time."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.outer(t, inv)
    return freqs.cos(), freqs.sin()
