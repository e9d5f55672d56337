"""The GEMM with B read in the wrong layout, for measuring D.

B's bytes read as if they were stored [K, N] (a "TN" kernel called on "NT"
data): every byte is read, the products are the wrong ones. (With K or N
equal to 1 the two layouts coincide; no correctness shape has that.)
"""
import torch


def drop(A, B):
    K = A.shape[1]
    N = B.shape[0]
    return (A.float() @ B.float().reshape(K, N)).to(torch.bfloat16)
