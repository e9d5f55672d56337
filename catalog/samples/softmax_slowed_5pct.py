# An incumbent about 5% slower than the catalog's eager softmax, for scripts/gpu/accept.sh's
# "5% faster" row (issue 17: a 5% faster variant must be accepted): torch.softmax, then one
# in-place pass over the first rows of its output, sized to ~5% of the call on an H200.
# The pass multiplies by 1.0, so the output is torch.softmax's to the bit.

import torch

# The eager softmax's median at each graded shape (docs/PERF.md, session 27: 2022 / 930 /
# 1138 us) against a full in-place pass over its 1 GiB output (~510 us, a bf16 clone's time):
# the share of rows whose pass costs 5% of the call. Other shapes (correctness trials, the
# CPU's measure shapes) take a tenth of the rows.
_SHARE = {(65536, 8192): 0.05 * 2022 / 510, (16384, 32768): 0.05 * 930 / 510, (262144, 2048): 0.05 * 1138 / 510}


def softmax(x):
    y = torch.softmax(x, dim=-1)
    rows = max(1, int(x.shape[0] * _SHARE.get(tuple(x.shape), 0.1)))
    y[:rows].mul_(1.0)
    return y
