# CPU solution: the library's log-sum-exp over the float32 upcast and the label's
# logit by gather; no [T, V] exponentials kept.
import torch


def cross_entropy(logits, labels):
    lf = logits.float()
    return torch.logsumexp(lf, dim=-1) - lf.gather(-1, labels.long().unsqueeze(-1)).squeeze(-1)
