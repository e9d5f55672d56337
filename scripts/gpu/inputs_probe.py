"""How long the judge takes to make one input set on the GPU (docs/PERF.md, "What an input set
costs"): inputs.make_inputs for the softmax task's graded shapes by torch's recipe and by the fused
draw (draw_fused.py), against torch.randn of the same shape in float32 alone, best of 10 after a
warm-up. Also each way's set's mean and standard deviation (the same law: ~0 and ~1.08, the row
factors' spread), and whether the fused draw held to its known answers (a line if it turned off).
Run from the repository root:
    $PY scripts/gpu/inputs_probe.py
Prints one line per shape."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))
from kzoo_judge import draw_fused, inputs  # noqa: E402
from kzoo_judge import task as taskmod  # noqa: E402


def best_ms(fn, n=10):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def main():
    raw = json.load(open("catalog/tasks/softmax/task.json"))
    task = taskmod.Task(raw)
    said = []
    fused = draw_fused.Lazy(said.append)
    for dims in raw["workloads"]["synthetic"]["graded"]:
        d = dict(zip(raw["workloads"]["synthetic"]["dims"], dims))
        shape = tuple(task.input_shapes(d)[0])
        inputs.use_fused(None)
        made = best_ms(lambda: inputs.make_inputs(task, d, 7, "cuda"))
        x = inputs.make_inputs(task, d, 7, "cuda")[0].float()
        law_torch = (float(x.mean()), float(x.std()))
        del x
        inputs.use_fused(fused)
        drawn = best_ms(lambda: inputs.make_inputs(task, d, 7, "cuda"))
        x = inputs.make_inputs(task, d, 7, "cuda")[0]
        again = torch.equal(x, inputs.make_inputs(task, d, 7, "cuda")[0])
        x = x.float()
        law_fused = (float(x.mean()), float(x.std()))
        del x
        inputs.use_fused(None)
        rng = best_ms(lambda: torch.randn(shape, device="cuda", dtype=torch.float32))
        gb = torch.Size(shape).numel() * 2 / 1e9
        print("inputs_probe: softmax %s (%.2f GB bf16): make_inputs %.2f ms, fused draw %.2f ms (%.1fx; drawn %d, the same "
              "set twice %s); randn float32 alone %.2f ms; mean/std torch %.5f/%.5f, fused %.5f/%.5f%s"
              % (list(shape), gb, made, drawn, made / drawn if drawn else 0, fused.drawn, again, rng, law_torch[0],
                 law_torch[1], law_fused[0], law_fused[1], ("; " + "; ".join(said)) if said else ""), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
