"""A top-k source's exactness on the GPU on the rows that take the exact path (issue 21, round 7):
emulate_cuda1.py's adversarial rows (ties, all equal, -0.0/+0.0, infinities, late tied spikes, a
flat sample, duplicates at the K-th place) at several widths, and judge-like rows at the task's
correctness shapes, and 3000 rows of width 32768 with every 7th adversarial (more rows than a
persistent kernel's wave), each against torch.sort(stable=True), values as bits and indices.

  python3 lab/topk-logits/adversarial_gpu.py SRC_DIR [SRC_DIR ...]   (GPU machine, repository root)

One JSON line per source: rows checked, rows wrong, the first few wrong (width, kind, row).
"""
import json
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "gpu"))

from catalog_helper import _load_solution  # noqa: E402
from emulate_cuda1 import K, adversarial, judge_like  # noqa: E402

# What _load_solution reads of a task: several sources load side by side, each with its own modules.
TASK = types.SimpleNamespace(name="topk-logits", module="topk_logits.py", entry_point="topk_logits")


def cases():
    g = torch.Generator().manual_seed(11)
    for V in (50, 1000, 4097, 32768, 131072, 262144):
        yield V, "adversarial", adversarial(V, g)
    for B, V in ((1, 50), (3, 1000), (2, 4097), (64, 32000), (5, 65537), (4, 128256), (8, 511), (8, 513)):
        yield V, "judge-like", judge_like(B, V, 3 * V + B)
    # More rows than one wave of CTAs (cuda3 is persistent: a CTA takes many rows, its ring
    # streaming the next row while this one takes the exact path): every 7th row adversarial.
    # GPU only: a CPU replay (scripts/gpu/test_topk_exact.py) has no kernel to be persistent.
    if not torch.cuda.is_available():
        return
    V = 32768
    x = torch.randn(3000, V, generator=g)
    adv = adversarial(V, g)
    x[::7] = adv[torch.arange(0, 3000, 7) // 7 % adv.shape[0]]
    yield V, "many-rows", x


def main():
    for src in sys.argv[1:]:
        out = {"src": src, "rows": 0, "wrong": 0, "first_wrong": []}
        try:
            fn = _load_solution(TASK, src)
            for V, kind, x in cases():
                xc = x.cuda()
                v, i = fn(xc)
                torch.cuda.synchronize()
                rv, ri = torch.sort(xc, dim=-1, descending=True, stable=True)
                rv, ri = rv[:, :K], ri[:, :K]
                ok = (v.view(torch.int32) == rv.view(torch.int32)).all(dim=1) & (i == ri).all(dim=1)
                out["rows"] += x.shape[0]
                for r in (~ok).nonzero().flatten().tolist():
                    out["wrong"] += 1
                    if len(out["first_wrong"]) < 8:
                        out["first_wrong"].append([V, kind, r])
        except Exception as e:  # noqa: BLE001 - a source that fails is a line, not a stop
            out["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
