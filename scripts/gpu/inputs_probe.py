"""How long the judge takes to make one input set on the GPU (docs/PERF.md, "Inputs in one pass
less"): inputs.make_inputs for the softmax task's graded shapes, against the float32-then-cast
recipe it replaced, best of 10 after a warm-up. Run from the repository root:
    $PY scripts/gpu/inputs_probe.py
Prints one line per shape and checks that both recipes give the same bits."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))
from kzoo_judge import inputs  # noqa: E402
from kzoo_judge import task as taskmod  # noqa: E402


def old_recipe(shape, seed, name, dtype):
    g = inputs._gen(inputs._mix(seed, name), "cuda")
    x = torch.randn(shape, generator=g, device="cuda", dtype=torch.float32)
    rows = shape[0]
    f = torch.rand(rows, generator=g, device="cuda") * 2 - 1
    return x.reshape(rows, shape[-1]).mul_(torch.exp2(f).unsqueeze(1)).reshape(shape).to(dtype)


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
        new = best_ms(lambda: inputs.make_inputs(task, d, 7, "cuda"))
        old = best_ms(lambda: old_recipe(shape, 7, name, torch.bfloat16))
        same = torch.equal(inputs.make_inputs(task, d, 7, "cuda")[0], old_recipe(shape, 7, name, torch.bfloat16))
        gb = torch.Size(shape).numel() * 2 / 1e9
        print("inputs_probe: softmax %s (%.2f GB bf16): make_inputs %.2f ms, float32-then-cast %.2f ms, ratio %.3f, bits equal %s"
              % (list(shape), gb, new, old, new / old, same), flush=True)


if __name__ == "__main__":
    main()
