"""CPU check of "pick" (round 4): its dispatch and plans, by width alone. Each plan must be
the round-3 kernel's own plan (the solution's for one-segment rows, w1split's otherwise),
so emulate.py (solution) and emulate_w1.py (w1split), which match a stable sort bit for bit,
cover both paths; prints the path per correctness and graded width.
usage: python3 lab/topk-logits/check_pick.py"""
import sys, types, importlib.util, os
tr = types.ModuleType("triton"); tl = types.ModuleType("triton.language")
tr.jit = lambda f=None, **kw: (f if f else (lambda g: g))
tr.next_power_of_2 = lambda n: 1 << (int(n) - 1).bit_length()
tr.cdiv = lambda a, b: (a + b - 1) // b
tl.constexpr = object
tr.language = tl
sys.modules["triton"] = tr; sys.modules["triton.language"] = tl
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m); return m


pk = load("pk", os.path.join(here, "pick", "topk_logits.py"))
sol = load("sol", os.path.join(root, "catalog/solutions/gpu/h200/sampling/topk/fp32/topk_logits_eager/src/topk_logits.py"))
w1 = load("w1", os.path.join(here, "w1split", "topk_logits.py"))
bad = 0
for V in (50, 1000, 4097, 32000, 65537, 128256, 131072, 262144, 32768):
    kind, p = pk._plan(V)
    want = w1._plan(V) if kind == "w" else sol._plan(V)
    ok = p == want
    bad += not ok
    print(V, "w1split" if kind == "w" else "solution", "plan ok" if ok else "PLAN MISMATCH", p)
assert pk._plan(131072)[0] == "w" and pk._plan(262144)[0] == "w" and pk._plan(32768)[0] == "a"
print("BAD", bad)
