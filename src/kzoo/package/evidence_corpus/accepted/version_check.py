import torch
import triton


def check_environment() -> None:
    """Refuse to run on versions this kernel was not written for."""
    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 3):
        raise RuntimeError("needs torch>=2.3, found " + torch.__version__)
    if torch.version.cuda is None or tuple(int(v) for v in torch.version.cuda.split(".")) < (12, 4):
        raise RuntimeError("needs CUDA 12.4 or newer")
    if torch.cuda.get_device_capability() < (9, 0):
        raise RuntimeError("needs an sm_90 GPU (H100/H200)")
    assert triton.__version__ >= "2.3"
