# A deliberately slow, correct softmax for the A/B tests (tests/cli/service.sh,
# judge/tests/test_ab.py): the catalog's three-pass eager softmax done six times
# over, about six times the work, so any real improvement clearly beats it.

import torch


def softmax(x):
    y = None
    for _ in range(6):
        xf = x.float()
        row_max = xf.max(dim=-1, keepdim=True).values
        e = torch.exp(xf - row_max)
        y = (e / e.sum(dim=-1, keepdim=True)).to(torch.bfloat16)
    return y
