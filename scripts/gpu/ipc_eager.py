#!/usr/bin/env python3
"""Does a call run slower on inputs that live in another process's memory (CUDA IPC, as
the judge hands them to its child) than on the child's own copies of them?

Usage (on the GPU machine, from the repository root):
  python3 scripts/gpu/ipc_eager.py TASK.json SRC_DIR SHAPE_INDEX [CALLS]

The parent makes the inputs with the judge's generator and sends them to a spawned child
over a torch.multiprocessing queue (CUDA IPC, as the judge does). The child times the
package's entry point with CUDA events (L2 read-flushed before each call, window ending
on the stream), alternating between the IPC tensors and clones of them in its own
memory. Prints both medians and their ratio, and the judge's drain tail after each.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def child(q, done, task_path, src_dir, shape_index, calls):
    from eager_package import l2_buffer, load, timed_call
    _, _, _, fn = load(task_path, src_dir, shape_index)
    sets = q.get()
    buf = l2_buffer()
    local = [[t.clone() for t in s] for s in sets]
    times = {"ipc": [], "local": []}
    tails = {"ipc": [], "local": []}
    for i in range(calls * 2 + 4):
        kind = "ipc" if i % 2 == 0 else "local"
        args = (sets if kind == "ipc" else local)[(i // 2) % len(sets)]
        tail = []
        us, _ = timed_call(fn, args, buf.sum, tail=tail)
        if i >= 4:
            times[kind].append(us)
            tails[kind] += tail
    ipc, loc = statistics.median(times["ipc"]), statistics.median(times["local"])
    print("ipc inputs %.1f us, local copies %.1f us, ipc/local %.4f (%d calls each)" % (ipc, loc, ipc / loc, calls))
    print("drain tails (spin on the stream end, device sync, event): ipc inputs %.1f us, local copies %.1f us (medians)"
          % (statistics.median(tails["ipc"]), statistics.median(tails["local"])))
    del sets, local
    done.put(True)


def main():
    task_path, src_dir, shape_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    from eager_package import load
    from kzoo_judge import inputs
    task, _, dims, _ = load(task_path, src_dir, shape_index)
    sets = [inputs.make_inputs(task, dims, 5000 + i, "cuda") for i in range(3)]
    torch.cuda.synchronize()
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(q, done, task_path, src_dir, shape_index, calls))
    p.start()
    q.put(sets)
    done.get(timeout=300)
    p.join(60)
    print("%s shape %s" % (task.name, dims))


if __name__ == "__main__":
    main()
