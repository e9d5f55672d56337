"""The bandwidth ceiling of a memory-bound task: the fastest any kernel moves its bytes on this GPU.

What: for each task and graded shape, the bytes a kernel must read (R: every input, once) and write
(W: every output, and every input mutated in place), then the time of (1) a Triton streaming kernel
that reads R and writes W with the task's stream split (one flat int32 buffer per tensor, 16-byte
accesses, reads feeding the writes), swept over BLOCK / num_warps / a persistent grid / streaming
cache hints, and (2) torch's own device copy of (R+W)/2 bytes. CUDA events around one call, L2
flushed before it and the device kept busy before the start event (as catalog_helper.py), median of
--calls after warm-up.
Why: the memory-bound targets are min(roofline/0.8, torch.compile/1.05) with roofline = bytes at the
4.8 TB/s datasheet peak; rmsnorm-residual's is 92.5% of that peak, while a device copy measured ~90%.
This tells a reachable target from an impossible one, with evidence.
Usage (repository root, GPU machine; --help and the byte accounting run anywhere):
  python3 scripts/gpu/ceiling.py [--shape 0] [--calls 30] [--json FILE] [--deadline-s 100] \\
      catalog/tasks/rmsnorm-residual catalog/tasks/layernorm ...
One line per (task, shape) on stdout; --json FILE gets one JSON line each.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "judge"))
sys.path.insert(0, HERE)

from kzoo_judge import dtype_names, gates  # noqa: E402  (neither imports torch)
from kzoo_judge import task as task_mod  # noqa: E402
from kzoo_judge.entry import device_class  # noqa: E402

# Bytes per element of every task dtype; float8 is one byte whichever torch carries it.
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int32": 4,
               "int64": 8, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}
assert set(DTYPE_BYTES) == set(dtype_names.ALL), "a task dtype has no byte size here"

MAX_IN, MAX_OUT = 4, 3  # pointer slots of the Triton kernel; more streams are folded (fold())
ALIGN = 64  # each stream's buffer is padded to 64 B: 16 int32, so Triton proves 16-byte accesses


def load_task(path):
    """A task from its directory (catalog/tasks/NAME) or its task.json."""
    return task_mod.load(os.path.join(path, "task.json") if os.path.isdir(path) else path)


def graded_dims(task, indices=None):
    """[(index, dims)] of the graded shapes (all, or `indices`), through the judge's own binding."""
    shapes = task.shapes(None, "graded")
    if not shapes:
        raise task_mod.TaskError("%s: its workload has no graded shapes" % task.path)
    idx = list(range(len(shapes))) if indices is None else list(indices)
    for i in idx:
        if not 0 <= i < len(shapes):
            raise task_mod.TaskError("%s: graded shape %d does not exist (it has %d)" % (task.path, i, len(shapes)))
    return [(i, shapes[i]) for i in idx]


def _nbytes(spec, dims):
    n = DTYPE_BYTES[spec.dtype]
    for x in spec.resolve(dims):
        n *= x
    return n


def byte_streams(task, dims):
    """(reads, writes): reads [(name, bytes)] one per input; writes [(name, bytes, in_place)] one per
    output plus any input mutated in place that the outputs do not already name."""
    reads = [(s.name, _nbytes(s, dims)) for s in task.inputs]
    writes = [(s.name, _nbytes(s, dims), s.name in task.in_place) for s in task.outputs]
    named = {w[0] for w in writes}
    writes += [(s.name, _nbytes(s, dims), True) for s in task.inputs if s.name in task.in_place and s.name not in named]
    return reads, writes


def account(task, dims, bandwidth_GBps):
    """R, W, the streams, roofline_us of R+W, and the task's own roofline (its canonical work) beside it:
    they differ where the task counts bytes otherwise (rotary-embedding: the cos/sin rows gathered
    per token, T*D*4, not the P*D*4 cache read once)."""
    reads, writes = byte_streams(task, dims)
    r, w = sum(b for _, b in reads), sum(b for _, b, _ in writes)
    out = {"R": r, "W": w, "reads": reads, "writes": writes, "roofline_us": (r + w) / (bandwidth_GBps * 1e9) * 1e6}
    roof_s, how = gates.roofline_seconds(task, dims, {"bandwidth_GBps": bandwidth_GBps})
    out["task_roofline_us"], out["task_roofline_how"] = (roof_s * 1e6 if roof_s else None), how
    if task.metric == "GB/s":
        out["task_bytes"] = task.work(dims)
        out["bytes_match_task"] = abs(out["task_bytes"] - (r + w)) < 0.5
    return out


def fold(streams, most):
    """At most `most` streams: the two smallest merged (their bytes summed, no longer in place) until
    they fit. The kernel has fixed pointer slots; a merged small stream costs the same DRAM bytes."""
    s = [tuple(x) + (False,) * (3 - len(x)) for x in streams]
    while len(s) > most:
        s.sort(key=lambda x: x[1])
        a, b = s.pop(0), s.pop(0)
        s.append((a[0] + "+" + b[0], a[1] + b[1], False))
    return s


def slot_chunk(j, c, J):
    """The chunk (of c) that slot j (of J >= c) handles, or None. Every stream is cut into BLOCK chunks;
    slot j touches chunk j*c//J of each, the last slot mapping to it does, so each chunk is read or
    written once and streams of every size advance together, as a fused kernel's rows do. The
    kernel computes the same, in int64."""
    k = j * c // J
    return k if (j + 1) * c // J > k else None


def best(results):
    """The fastest of [{"config", "us" or "error"}], or None where none ran."""
    ok = [r for r in results if isinstance(r.get("us"), (int, float))]
    return min(ok, key=lambda r: r["us"]) if ok else None


def configs(n_sm):
    """BLOCK x num_warps with at least 4 int32 (16 B) a thread, each on a one-chunk-a-program grid
    (per_sm 0) and on a persistent grid of 64 warps' worth of programs per SM (full occupancy when
    registers allow), and the first also with streaming hints (loads evict_first, stores .cs: data
    used once need not stay in L2). 42 configs, a Triton compile each the first time (cached on disk)."""
    out = []
    for block in (1024, 2048, 4096, 8192, 16384):
        for warps in (4, 8, 16):
            if block >= 4 * 32 * warps:
                for per_sm, hint in ((0, False), (0, True), (64 // warps, False)):
                    out.append({"BLOCK": block, "num_warps": warps, "per_sm": per_sm, "grid_cap": per_sm * n_sm,
                                "hint": hint})
    return out


def _gpu(task, shape_list, args, t_end, emit):  # noqa: C901 - the GPU path, in one place
    import torch
    import triton
    import triton.language as tl
    from catalog_helper import PAD_CYCLES  # the judge's launch pad, in cycles
    from eager_package import l2_buffer, timed_call

    @triton.jit
    def _ld(p, n, j, J, r, live, acc, BLOCK: tl.constexpr, EV: tl.constexpr):
        c = (n + BLOCK - 1) // BLOCK
        k = j * c // J
        offs = k * BLOCK + r
        m = (offs < n) & (((j + 1) * c // J) > k) & live
        return acc ^ tl.load(p + offs, mask=m, other=0, eviction_policy=EV)

    @triton.jit
    def _st(p, n, j, J, r, live, acc, BLOCK: tl.constexpr, CM: tl.constexpr):
        c = (n + BLOCK - 1) // BLOCK
        k = j * c // J
        offs = k * BLOCK + r
        tl.store(p + offs, acc, mask=(offs < n) & (((j + 1) * c // J) > k) & live, cache_modifier=CM)

    @triton.jit
    def stream(i0, i1, i2, i3, o0, o1, o2, a0, a1, a2, a3, b0, b1, b2, J, G, STEPS,
               N_IN: tl.constexpr, N_OUT: tl.constexpr, BLOCK: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr):
        r = tl.arange(0, BLOCK)
        for t in range(STEPS):  # STEPS = 1 unless persistent
            j = tl.program_id(0).to(tl.int64) + t * G
            live = j < J
            # xor of every input's chunk feeds every output's: loads cannot be dropped, writes follow reads
            acc = _ld(i0, a0, j, J, r, live, tl.zeros([BLOCK], tl.int32), BLOCK, EV)
            if N_IN > 1:
                acc = _ld(i1, a1, j, J, r, live, acc, BLOCK, EV)
            if N_IN > 2:
                acc = _ld(i2, a2, j, J, r, live, acc, BLOCK, EV)
            if N_IN > 3:
                acc = _ld(i3, a3, j, J, r, live, acc, BLOCK, EV)
            _st(o0, b0, j, J, r, live, acc, BLOCK, CM)
            if N_OUT > 1:
                _st(o1, b1, j, J, r, live, acc, BLOCK, CM)
            if N_OUT > 2:
                _st(o2, b2, j, J, r, live, acc, BLOCK, CM)

    dc_name, dc = device_class()
    n_sm = torch.cuda.get_device_properties(0).multi_processor_count
    flush = l2_buffer().zero_

    def median_us(fn):
        for _ in range(3):
            timed_call(fn, (), flush=flush, pad_cycles=PAD_CYCLES)
        return statistics.median(timed_call(fn, (), flush=flush, pad_cycles=PAD_CYCLES)[0] for _ in range(args.calls))

    def n32(b):  # int32 elements of a stream padded to ALIGN bytes
        return -(-b // ALIGN) * ALIGN // 4

    for i, dims in shape_list:
        if time.time() > t_end:
            print("skipped (deadline): %s shape %d" % (task.name, i), flush=True)
            continue
        rec = {"task": task.name, "shape_index": i, "shape": dims, "device": torch.cuda.get_device_name(0),
               "device_class": dc_name, "torch": torch.__version__, "triton": triton.__version__}
        try:
            rec.update(account(task, dims, dc["bandwidth_GBps"]))
            ins, outs = fold(rec["reads"], MAX_IN), fold(rec["writes"], MAX_OUT)
            rec["kernel_reads"], rec["kernel_writes"] = ins, outs
            # Values < 2**30: their xor never reads -1, the sentinel every output starts from.
            bufs = {n: torch.randint(0, 2 ** 30, (n32(b),), dtype=torch.int32, device="cuda") for n, b, _ in ins}
            # An input mutated in place is written where it was read, as the task's kernel must.
            obufs = [bufs[n] if ip and n in bufs else torch.full((n32(b),), -1, dtype=torch.int32, device="cuda")
                     for n, b, ip in outs]
            ip_ = [bufs[n] for n, _, _ in ins] + [bufs[ins[0][0]]] * (MAX_IN - len(ins))
            op_ = obufs + [obufs[0]] * (MAX_OUT - len(outs))
            na = [t.numel() for t in ip_[:len(ins)]] + [0] * (MAX_IN - len(ins))
            nb = [t.numel() for t in op_[:len(outs)]] + [0] * (MAX_OUT - len(outs))
            results, skipped = [], 0
            for cfg in configs(n_sm):
                if time.time() > t_end:
                    skipped += 1
                    continue
                J = -(-max(na) // cfg["BLOCK"])
                G = min(J, cfg["grid_cap"]) if cfg["per_sm"] else J
                steps = -(-J // G)

                def call(cfg=cfg, J=J, G=G, steps=steps, ins_=ip_, outs_=op_):
                    stream[(G,)](*ins_, *outs_, *na, *nb, J, G, steps, N_IN=len(ins), N_OUT=len(outs),
                                 BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"],
                                 EV="evict_first" if cfg["hint"] else "", CM=".cs" if cfg["hint"] else "")
                try:
                    fresh = [o for o, (n, _, ip) in zip(obufs, outs) if not (ip and n in bufs)]
                    for o in fresh:
                        o.fill_(-1)
                    call()
                    torch.cuda.synchronize()
                    if any(bool((o == -1).any()) for o in fresh):  # a config that skips bytes is no evidence
                        raise RuntimeError("an output element was never written")
                    results.append({"config": cfg, "us": median_us(call)})
                except Exception as e:  # out of resources, a compile error: that config only
                    results.append({"config": cfg, "error": "%s: %s" % (type(e).__name__, str(e)[:200])})
            call = None  # its defaults hold the buffers: let them go with the rest
            del bufs, obufs, ip_, op_, call
            b = best(results)
            rec["configs"], rec["configs_skipped"] = results, skipped
            rec["triton_us"], rec["triton_config"] = (b["us"], b["config"]) if b else (None, None)
            half = -(-(rec["R"] + rec["W"]) // 8)  # int32 elements of (R+W)/2 bytes
            src = torch.randint(0, 2 ** 30, (half,), dtype=torch.int32, device="cuda")
            dst = torch.empty_like(src)
            rec["torch_copy_us"] = median_us(lambda d=dst, s=src: d.copy_(s))
            del src, dst
            moved = rec["R"] + rec["W"]
            rec["ceiling_us"] = min(x for x in (rec["triton_us"], rec["torch_copy_us"]) if x)
            rec["best_TBps"] = moved / rec["ceiling_us"] / 1e6
            rec["pct_of_peak"] = 100 * rec["roofline_us"] / rec["ceiling_us"]
            if rec.get("task_roofline_us"):  # the task's own roofline target (roofline/0.8) beside the ceiling
                rec["roofline_target_us"] = rec["task_roofline_us"] / 0.8
        except Exception as e:
            rec["error"] = "%s: %s" % (type(e).__name__, e)
        torch.cuda.empty_cache()
        emit(rec)


def line(rec):
    head = "%s shape %d %s" % (rec["task"], rec["shape_index"], rec.get("shape"))
    if "error" in rec:
        return head + ": error " + rec["error"]
    c = rec["triton_config"] or {}
    return ("%s: R %.4g B W %.4g B roofline %.1f us; triton %s us (BLOCK %s warps %s per_sm %s hint %s);"
            " torch copy %.1f us; ceiling %.1f us = %.3f TB/s = %.1f%% of peak%s" % (
                head, rec["R"], rec["W"], rec["roofline_us"],
                "%.1f" % rec["triton_us"] if rec["triton_us"] else "-", c.get("BLOCK"), c.get("num_warps"),
                c.get("per_sm"), c.get("hint"), rec["torch_copy_us"], rec["ceiling_us"], rec["best_TBps"],
                rec["pct_of_peak"],
                "" if rec.get("bytes_match_task", True) else "; task counts %.4g B" % rec["task_bytes"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tasks", nargs="+", help="task directories (catalog/tasks/NAME) or task.json files")
    ap.add_argument("--shape", type=int, action="append", help="graded shape index (repeatable; default all)")
    ap.add_argument("--calls", type=int, default=30, help="timed calls per figure (median)")
    ap.add_argument("--json", help="append one JSON line per (task, shape) to this file")
    ap.add_argument("--deadline-s", type=float, default=100, help="start no new work after this many seconds")
    args = ap.parse_args(argv)
    t_end = time.time() + args.deadline_s
    jf = open(args.json, "a") if args.json else None

    def emit(rec):
        print(line(rec), flush=True)
        if jf:
            jf.write(json.dumps(rec) + "\n")
            jf.flush()
    for path in args.tasks:
        if time.time() > t_end:
            print("skipped (deadline): %s" % path, flush=True)
            continue
        try:
            task = load_task(path)
            shape_list = graded_dims(task, args.shape)
        except task_mod.TaskError as e:
            emit({"task": path, "shape_index": -1, "error": str(e)})
            continue
        _gpu(task, shape_list, args, t_end, emit)
    if jf:
        jf.close()


if __name__ == "__main__":
    main()
