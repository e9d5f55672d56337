"""Measures each candidate's accumulation error on the H200, to calibrate accuracy_model.py.

  python3 lab/fp8-blockscale-gemm/zprobe.py SRC_DIR... [--m 2048 --n 2048 --k 8192 --seeds 2]

The board's bound bites where the reference is near zero, so the error that matters is the
accumulation's, not bf16's rounding: at outputs with |ref| < 1/16 bf16 rounds by at most 2^-14, so
there (out - ref) is the kernel's own error. Normalised by s = sqrt(sum_k (a_ik b_jk)^2) (the spread
of such a sum), z's spread is what accuracy_model.graded_failures turns into an expected count of
graded outputs past the bound. One JSON line per source.
"""
import argparse
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "judge"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from kzoo_judge import dtypes, inputs  # noqa: E402
from kzoo_judge import task as task_mod  # noqa: E402
from accuracy_model import graded_failures  # noqa: E402

BLOCK = 128


def _load(src, task):
    spec = importlib.util.spec_from_file_location("zprobe_" + os.path.basename(src.rstrip("/")),
                                                  os.path.join(src, task.module))
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, src)
    spec.loader.exec_module(mod)
    sys.path.remove(src)
    return getattr(mod, task.entry_point)


def _real(q, scale, rows_per_scale):
    v = dtypes.to_float(q, "float8_e4m3fn").double()
    s = scale.double().repeat_interleave(rows_per_scale, dim=0)[: q.shape[0]]
    s = s.repeat_interleave(BLOCK, dim=1)[:, : q.shape[1]]
    return v * s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("srcs", nargs="+")
    p.add_argument("--m", type=int, default=2048)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    task = task_mod.load(os.path.join(ROOT, "catalog", "tasks", "fp8-blockscale-gemm", "task.json"))
    _, w = task.workload(None)
    dims = task.bind(w, [a.m, a.n, a.k])
    sets = []
    for seed in range(a.seeds):
        x = inputs.make_inputs(task, dims, 4242 + seed, a.device)
        A, As, B, Bs = x
        ar, br = _real(A, As, 1), _real(B, Bs, BLOCK)
        ref = ar @ br.t()
        s = torch.sqrt((ar * ar) @ (br * br).t())
        sets.append((x, ref, s))
    for src in a.srcs:
        out = {"src": src, "shape": [a.m, a.n, a.k]}
        t0 = time.time()
        try:
            fn = _load(src, task)
            zs, errs, n_small = [], [], 0
            for x, ref, s in sets:
                got = fn(*[t.clone() for t in x]).double()
                if got.is_cuda:
                    torch.cuda.synchronize()
                small = ref.abs() < 0.0625
                d = (got - ref)[small]
                zs.append(d / s[small])
                errs.append(d.abs().max() if d.numel() else torch.zeros((), dtype=torch.float64, device=d.device))
                n_small += int(small.sum())
            z = torch.cat(zs)
            zstd, zmean = float(z.std()), float(z.mean())
            out.update({"near_zero_outputs": n_small, "err_max_near_zero": float(torch.stack(errs).max()),
                        "z_std": zstd, "z_mean": zmean,
                        "expected_failures_8192": graded_failures(zstd, zmean, 8192),
                        "expected_failures_4096": graded_failures(zstd, zmean, 4096, 16384, 8192)})
        except Exception as e:  # noqa: BLE001 - a candidate that fails is a line, not a stop
            out["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:300] if str(e).strip() else "")
        out["wall_s"] = round(time.time() - t0, 1)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
