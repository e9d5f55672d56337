"""The judge started before its job: `python3 -m kzoo_judge.warm` (runner/warm_judge.hpp).

A worker starts it in the sandbox the next job's benchmark.py would get, on a W that holds
only empty folders. It does now what benchmark.py's judge does before its clock -- its
children started, torch imported, the CUDA context made (3.2-5.0 s on an H200, docs/PERF.md)
-- and then waits on the control socket (KZOO_CONTROL_FD) for the job: one JSON message,
{"env": {...}, "seed": "<hex>"}, ended by the runner closing its end. With it, the job's
environment is set, the seed is put where read_secret() takes it, and the trusted harness
.kernel_package/benchmark.py runs as __main__, exactly as the runner would have started it.

Nothing of the job exists here before the message: W was empty when the children started and
none reads from it before the judge sends it work; the seed arrives only with the message.
The message refused (the judge's files changed since this process started, or it does not
parse) ends the process with WARM_REFUSED and nothing on stdout: the runner then runs the job
cold. The socket closed without a message (the job went elsewhere) ends it quietly.
"""

import json
import os
import runpy
import sys

from . import compare_ptx, cuda_early, draw_ptx, entry, spawn

WARM_REFUSED = 4  # runner/warm_judge.hpp kWarmRefusedStatus


def _read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 65536)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        if sum(len(c) for c in chunks) > (1 << 20):
            raise ValueError("the message is over 1 MiB")


def refuse(why):
    print("kzoo-judge: warm: refusing the run: %s" % why, file=sys.stderr, flush=True)
    sys.exit(WARM_REFUSED)


def main():
    entry._mark("interpreter and kzoo_judge")
    entry.harden_judge()
    verdict_fd = entry.take_verdict_fd()
    try:
        control = int(os.environ.pop("KZOO_CONTROL_FD"))
        os.set_inheritable(control, False)
    except (KeyError, ValueError, OSError) as e:
        raise SystemExit("kzoo-judge: warm: KZOO_CONTROL_FD is not an open descriptor: %s" % e)
    version = entry.judge_version()
    w = os.getcwd()
    # The children its job is expected to need (spawn.early): the A/B's three when the runner
    # expects an incumbent (KZOO_WARM_AB=1), else the submission's alone -- each is one more
    # torch import beside this one (on an H200 four at once took 4.5-5.5 s, against 3.2 s for
    # two). The job fits them to what it is (Pool.fit); a child it lacks the judge starts.
    ab = os.environ.pop("KZOO_WARM_AB", "1") == "1"
    pool = spawn.early(os.path.join(w, "src"), os.environ.get("KZOO_DEVICE"),
                       os.path.join(w, ".kzoo", "incumbent", "src") if ab else None)
    entry._mark("the early children")
    early = cuda_early.Early(preload=(compare_ptx.PTX, draw_ptx.PTX)) if os.environ.get("KZOO_DEVICE") == "cuda" else None
    import torch  # noqa: F401 - the import this process is here for
    entry._mark("torch")
    if early is not None:
        why = early.join()
        if why:
            # torch.cuda.init() below makes what the thread did not; a module it did not preload
            # is loaded at its first use
            print("kzoo-judge: warm: not all made beside the import (the CUDA context, the judge's PTX): %s" % why,
                  file=sys.stderr, flush=True)
    if os.environ.get("KZOO_DEVICE") == "cuda" and torch.cuda.is_available():
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # the context itself, not only the driver
    entry._mark("the device")
    # torch's shared-memory manager, a process of its own that the first shared tensor starts
    # (the judge's doorbell, in Judge's constructor), comes up now, before the job: it loads
    # libtorch, 0.54 s of the judge's clock on the CPU. Started here it is still this process's
    # child, so the judge still names it one of its own helpers (freezer.adopt_helpers).
    import torch.multiprocessing as tmp
    tmp.set_sharing_strategy("file_system")
    torch.zeros(1).share_memory_()
    entry._mark("the shared-memory manager")
    print("kzoo-judge: warm: ready, waiting for the job (%s)" % ", ".join(entry._steps(entry._STARTUP, 0.0)[0]),
          file=sys.stderr, flush=True)
    try:
        raw = _read_all(control)
    finally:
        os.close(control)
    if not raw.strip():
        if pool is not None:
            pool.kill()
        return 0  # no job came: the runner discarded this judge
    try:
        msg = json.loads(raw)
        env, seed = msg["env"], msg["seed"]
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("env is not an object of strings")
        bytes.fromhex(seed)
    except (ValueError, KeyError, TypeError) as e:
        refuse("the runner's message does not parse (%s)" % e)
    if entry.judge_version() != version:
        refuse("the judge's files changed since this process started (%s, now %s)" % (version, entry.judge_version()))
    entry._went(pool, verdict_fd)
    os.environ.update(env)
    r, wr = os.pipe()
    os.write(wr, seed.encode("ascii"))
    os.close(wr)
    os.environ["KZOO_SEED_FD"] = str(r)
    script = os.path.join(w, ".kernel_package", "benchmark.py")
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
