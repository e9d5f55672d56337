# Eager PyTorch baseline of KBench task "cross-entropy" (kernel package
# h200/loss/cross_entropy/bf16/cross_entropy_eager): the call a PyTorch user makes, so that the board's
# speed-up is over PyTorch's own kernels, not over the task's float32 reference maths (task.json's
# reference, which correctness is still measured against). The judge imports cross_entropy() from this
# file.
import torch.nn.functional as F


def cross_entropy(logits, labels):
    # On the float32 upcast, as language-model code calls it (Hugging Face's causal-LM loss does
    # logits.float() first). On the bf16 logits themselves F.cross_entropy keeps bf16 log-probabilities
    # and returns a bf16 loss: about 2e-3 relative error, twenty times the task's 1e-4 tolerance, and
    # not the task's float32 output.
    return F.cross_entropy(logits.float(), labels, reduction="none")
