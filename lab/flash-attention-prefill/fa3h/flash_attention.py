# Causal flash attention (prefill, bf16), lab variant fa3h: the hybrid that the H200 runs of
# session 18 point to (lab NOTES, docs/GPU.md): fa3v3's kernel at D = 64 (a 192-row query block on
# three consumer warpgroups: 1306 / 1318 us against fa3v1's 1360) and fa3v1's at D = 128 (fa3v3's
# shares the reworked masking and block count there and ran 3% slower: 963 / 908 us against 935 /
# 880). Each variant's library is built from its own folder (their cache names differ by the
# source's digest) and loaded on its own ctypes handle, so the two kzoo_fa3_prefill symbols never
# meet. A lab module: the catalog package, if it wins in the sandbox and under ncu, carries both
# sources in its src/.
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _variant(name):
    path = os.path.join(HERE, os.pardir, name, "flash_attention.py")
    spec = importlib.util.spec_from_file_location("_kzoo_fa3h_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_d64 = _variant("fa3v3")
_d128 = _variant("fa3v1")
# As in the variants: the persistent grid instead of one CTA per tile, read at every call
# (smoke_fa3v1.py sets it to time both grids with one build).
PERSISTENT = int(os.environ.get("KZOO_FA3_PERSISTENT", "0"))


def flash_attention(q, k, v):
    m = _d64 if q.dim() == 4 and q.shape[-1] == 64 else _d128
    m.PERSISTENT = PERSISTENT
    return m.flash_attention(q, k, v)
