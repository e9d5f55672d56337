"""An independent correct top-k, for the error floor E.

torch.topk on float64 (a selection, not a sort), then equal values put in
index order by a second, stable sort of the 50 winners on (value, index).
"""
import torch

K = 50


def independent(logits):
    v, i = torch.topk(logits.double(), K, dim=-1, largest=True, sorted=True)
    # ties: lower index first. Sort by index, then stably by value descending.
    order = torch.argsort(i, dim=-1)
    v, i = v.gather(-1, order), i.gather(-1, order)
    order = torch.sort(v, dim=-1, descending=True, stable=True).indices
    return v.gather(-1, order).float(), i.gather(-1, order)
