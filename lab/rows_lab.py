"""Runs catalog_helper.py's lab for several tasks in one process (one torch/CUDA start-up).

usage: rows_lab.py --calls N --seeds N TASK_DIR:DEADLINE_S:SRC[,SRC...] ...
Each task's lab stops starting new work at its own deadline (from its own start).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))
import catalog_helper  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("jobs", nargs="+")
    a = p.parse_args()
    for job in a.jobs:
        task_dir, deadline, srcs = job.split(":", 2)
        t0 = time.time()
        print("# %s start" % task_dir, file=sys.stderr, flush=True)
        try:
            catalog_helper.lab(task_dir, srcs.split(","), a.calls, a.seeds, None, float(deadline))
        except Exception as e:  # noqa: BLE001 - the next task still runs
            print("# %s failed: %r" % (task_dir, e), file=sys.stderr, flush=True)
        print("# %s done in %.1f s" % (task_dir, time.time() - t0), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
