"""How long the judge takes to make one input set on the GPU, and how much of it is the random
numbers themselves (docs/PERF.md, "What an input set costs"): inputs.make_inputs for the softmax
task's graded shapes against torch.randn of the same shape in float32 alone, and against a recipe
with one pass less (the row scaling written straight into bfloat16), best of 10 after a warm-up.
Run from the repository root:
    $PY scripts/gpu/inputs_probe.py
Prints one line per shape; checks that the one-pass recipe gives the same bits."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))
from kzoo_judge import inputs  # noqa: E402
from kzoo_judge import task as taskmod  # noqa: E402


def one_pass(shape, seed, name, dtype):
    g = inputs._gen(inputs._mix(seed, name), "cuda")
    x = torch.randn(shape, generator=g, device="cuda", dtype=torch.float32)
    rows = shape[0]
    f = torch.exp2(torch.rand(rows, generator=g, device="cuda") * 2 - 1).unsqueeze(1)
    return torch.mul(x.reshape(rows, shape[-1]), f, out=torch.empty(shape, dtype=dtype, device="cuda").reshape(rows, shape[-1]))


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
    name = task.inputs[0].name
    for dims in raw["workloads"]["synthetic"]["graded"]:
        d = dict(zip(raw["workloads"]["synthetic"]["dims"], dims))
        shape = tuple(task.input_shapes(d)[0])
        made = best_ms(lambda: inputs.make_inputs(task, d, 7, "cuda"))
        rng = best_ms(lambda: torch.randn(shape, device="cuda", dtype=torch.float32))
        fused = best_ms(lambda: one_pass(shape, 7, name, torch.bfloat16))
        same = torch.equal(inputs.make_inputs(task, d, 7, "cuda")[0].view(-1), one_pass(shape, 7, name, torch.bfloat16).view(-1))
        gb = torch.Size(shape).numel() * 2 / 1e9
        print("inputs_probe: softmax %s (%.2f GB bf16): make_inputs %.2f ms; randn float32 alone %.2f ms; one pass less %.2f ms "
              "(bits equal %s)" % (list(shape), gb, made, rng, fused, same), flush=True)

if __name__ == "__main__":
    main()
