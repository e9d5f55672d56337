# Eager PyTorch baseline of KBench task "topk-logits" (kernel package h200/sampling/topk/fp32/topk_logits_eager):
# torch.topk, the call a sampler makes, so that the board's speed-up is over PyTorch's own selection, not
# over the task's full stable sort (task.json's reference, which correctness is still measured against).
# The judge imports topk_logits() from this file.
import torch

K = 50  # fixed by the task: scalars are constants, not judge-generated inputs


def topk_logits(logits):
    values, indices = torch.topk(logits, K, dim=-1)
    # torch.topk's values are exact, but its order among equal values is not specified, and the task's is
    # the lower column first. Made exact in two steps. (1) Within each run of equal values among the
    # winners, the columns ascending: one argsort of (run number, column) over the [B, 50] winners.
    new_run = torch.ones_like(values, dtype=torch.long)
    new_run[:, 1:] = (values[:, 1:] != values[:, :-1]).long()
    key = (new_run.cumsum(dim=-1) * logits.shape[-1]) + indices
    indices = indices.gather(-1, key.argsort(dim=-1))
    # The values from the reordered columns: equal values may differ in their bits (-0.0 and +0.0),
    # and the task is graded bitwise (a row holding both among its winners came out wrong before).
    values = logits.gather(-1, indices)
    # (2) Where the 50th value also stands outside the winners, torch.topk may have kept a higher column
    # than the task's: such a row (almost never, on real logits) takes the reference's stable sort. The
    # check reads the logits once more: the roofline's traffic, under a tenth of torch.topk's time.
    kth = values[:, K - 1:]
    short = (logits == kth).sum(dim=-1) != (values == kth).sum(dim=-1)
    if bool(short.any()):
        rows = short.nonzero().squeeze(-1)
        v, i = torch.sort(logits[rows], dim=-1, descending=True, stable=True)
        values[rows], indices[rows] = v[:, :K], i[:, :K]
    return values, indices
