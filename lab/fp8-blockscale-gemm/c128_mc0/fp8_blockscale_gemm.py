# The control of lab round 10: c128's module and kernel built with KZOO_MC=0 (no cluster, no
# multicast, 128-row B boxes, local arrivals only; everything else c128's), loaded from
# ../c128 under a name of its own. The knob is an environment variable that c128's module reads
# once at import, so it is set only around that import: c128 and this control then hold two
# libraries (two digests) in one process, as the lab's bench runs them.
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_SRC = os.path.join(os.path.dirname(HERE), "c128", "fp8_blockscale_gemm.py")


def _load():
    old = os.environ.get("KZOO_MC")
    os.environ["KZOO_MC"] = "0"
    try:
        spec = importlib.util.spec_from_file_location("_kzoo_fp8_c128_mc0", _SRC)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if old is None:
            del os.environ["KZOO_MC"]
        else:
            os.environ["KZOO_MC"] = old
    return mod


_mod = _load()
_build = _mod._build
MC = _mod.MC
fp8_blockscale_gemm = _mod.fp8_blockscale_gemm
