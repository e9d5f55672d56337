"""The cross-entropy that skips the normalisation, for measuring D.

-logits[t, label]: the NLL of the raw scores, never the log-softmax -- the
log-sum-exp over the vocabulary that is the task's whole cost is left out.
"""
import torch


def drop(logits, labels):
    return -logits.float().gather(-1, labels.long().unsqueeze(-1)).squeeze(-1)
