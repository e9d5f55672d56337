# CPU solution: the reference's passes done in place on one float32 copy (max,
# subtract and exp, sum, divide), so no temporaries are allocated; plain tensor
# ops, not torch's fused softmax (a library family the reference does not use).
import torch


def softmax(x):
    xf = x.float()
    xf.sub_(xf.amax(dim=-1, keepdim=True)).exp_()
    return xf.div_(xf.sum(dim=-1, keepdim=True)).to(torch.bfloat16)
