import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Row softmax.

    >>> softmax(torch.tensor([[1.0, 2.0], [3.0, 3.0]]))
    tensor([[0.2689, 0.7311],
            [0.5000, 0.5000]])
    """
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)
