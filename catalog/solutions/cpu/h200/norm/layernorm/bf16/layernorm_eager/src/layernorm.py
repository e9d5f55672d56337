# CPU solution: both moments from one var_mean pass, then the normalisation and
# the affine map in place on the float32 copy; plain tensor ops, not torch's fused
# layer_norm (a library family the reference does not use).
import torch

EPS = 1e-5


def layernorm(x, weight, bias):
    xf = x.float()
    var, mean = torch.var_mean(xf, dim=-1, unbiased=False, keepdim=True)
    xf.sub_(mean).mul_(var.add_(EPS).rsqrt_())
    return xf.mul_(weight.float()).add_(bias.float()).to(torch.bfloat16)
