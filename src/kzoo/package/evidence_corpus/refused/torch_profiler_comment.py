import torch

# prof.key_averages().table(sort_by="cuda_time_total"):
# Name                    Self CPU %   Self CPU    CPU total   CPU time avg   Self CUDA   CUDA total
# aten::softmax               0.52%    12.000us     2.301ms       1.150ms     1.234ms     1.234ms
# aten::_softmax              1.31%    30.000us     2.289ms       1.145ms     1.234ms     1.234ms
# cudaLaunchKernel           97.10%     2.234ms     2.234ms      74.467us     0.000us     0.000us


def f(x):
    return torch.softmax(x, dim=-1)
