# bf16 GEMM (out = A @ B^T) as a CUDA C++ kernel for sm_90a (bf16_gemm_sm90.cu: a TMA producer
# warp, a 4-stage mbarrier ring of 48 KiB stages, two wgmma consumer warpgroups of 64x256 on a
# 128x256 tile accumulating in fp32, a persistent grouped grid of one CTA per SM, the epilogue
# through shared memory and TMA stores; lab round 2: when the tiles do not divide evenly over
# the SMs, the last 1-2 waves' tiles are split by k block over all SMs (stream-K) and summed
# through a per-device fp32 workspace), built by the package's build step (build.py) and called
# through ctypes on torch's current stream.
#
# Shapes the TMA path does not take (K % 8 != 0: TMA's 16-byte row stride; misaligned bases)
# run a simple tiled CUDA kernel in the same library; N % 8 != 0 keeps the TMA mainloop with a
# masked register epilogue. CPU tensors and devices other than 9.0 take the reference's maths.
import ctypes
import importlib.util
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
STAGES = 4    # 48 KiB stages (128x64 A + 256x64 B) + 32 KiB of epilogue boxes
GROUP_M = 8   # tile rows per band of the grouped walk (the Triton solution's)
# 0: cuda1's data-parallel walk (the control), 1: hybrid stream-K (default), 2: stream-K also
# when tiles < SMs (device tests of the fixup at small shapes). Each value builds its own library.
SK = int(os.environ.get("KZOO_SK", "1"))


def _load_build():
    # By path under a name of its own: the lab imports several variants into one process.
    name = "_kzoo_bf16_build_" + hex(abs(hash(HERE)))[2:]
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_build = _load_build()
try:
    _lib = _build.load(STAGES, GROUP_M, SK)
    _lib_error = None
except Exception as e:  # noqa: BLE001 - only a machine without CUDA may go on (CPU maths)
    if torch.cuda.is_available():
        raise
    _lib, _lib_error = None, e

_path = ctypes.c_int(0)  # the last call's path: 1 TMA + TMA store, 2 TMA + register store, 3 fallback
_sk = ctypes.c_int(0)    # 1 when the last call split tiles by stream-K

# Per device: [fp32 partials (one 128 KiB slot an SM), flags (two words an SM, zeroed once), the
# last generation]. Allocated once and reused: the kernel tells calls apart by the generation,
# which every call bumps, so no memset runs per call. Calls on one stream only (the slots are
# shared by all calls on the device).
_ws = {}


def _config():
    v = [ctypes.c_int() for _ in range(5)]
    _lib.kzoo_bf16_config(*[ctypes.byref(x) for x in v])
    return dict(zip(("stages", "group_m", "smem", "sk", "slot_floats"), (x.value for x in v)))


_cfg = _config() if _lib is not None else None


def _workspace(device):
    idx = device.index if device.index is not None else torch.cuda.current_device()
    e = _ws.get(idx)
    if e is None:
        slots = torch.cuda.get_device_properties(idx).multi_processor_count
        e = [torch.empty(slots * _cfg["slot_floats"], dtype=torch.float32, device=device),
             torch.zeros(2 * slots, dtype=torch.int32, device=device), 0, slots]
        _ws[idx] = e
    e[2] = e[2] % 0xFFFFFFFF + 1  # 1 .. 2^32 - 1: 0 is the flags' initial value
    return e[0].data_ptr(), e[3], e[1].data_ptr(), e[2]


def _torch_maths(A, B):
    return (A.float() @ B.float().t()).to(torch.bfloat16)


def bf16_gemm(A, B):
    M, K = A.shape
    N = B.shape[0]
    if not (A.is_cuda and B.is_cuda and A.device == B.device) or _lib is None:
        return _torch_maths(A, B)
    if torch.cuda.get_device_capability(A.device) != (9, 0) or max(M, N, K) >= 2 ** 31:
        return _torch_maths(A, B)
    if K == 0:
        return torch.zeros(M, N, dtype=torch.bfloat16, device=A.device)
    A = A.contiguous()
    B = B.contiguous()
    if A.dtype != torch.bfloat16 or B.dtype != torch.bfloat16:
        A, B = A.to(torch.bfloat16), B.to(torch.bfloat16)
    out = torch.empty(M, N, dtype=torch.bfloat16, device=A.device)
    if M == 0 or N == 0:
        return out
    with torch.cuda.device(A.device):
        stream = torch.cuda.current_stream(A.device).cuda_stream
        ws, slots, flags, gen = _workspace(A.device) if SK else (None, 0, None, 0)
        rc = _lib.kzoo_bf16_gemm(A.data_ptr(), B.data_ptr(), out.data_ptr(), M, N, K, stream, ctypes.byref(_path),
                                 ws, slots, flags, gen, ctypes.byref(_sk))
    if rc:
        raise RuntimeError("bf16_gemm_sm90 launch failed: %d" % rc)
    return out
