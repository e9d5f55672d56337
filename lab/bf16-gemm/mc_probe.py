"""Where mc1's clusters lose (session 24: 30% slower than cuda1 in the lab, 1839 / 924 / 945 us).

Times lab/bf16-gemm/mc1 under four builds, each in a process of its own (the knobs are read at
import): KZOO_MC=1 (clusters of two, B's halves multicast), KZOO_MC=0 (the same clusters and pair
walk, each CTA loading its whole B: the lockstep's cost without multicast) and KZOO_CLUSTER=1
(cuda1's launch from the same source), and KZOO_MC=1 with KZOO_RELCLUSTER=1 (the remote
arrival released at cluster scope, as the lab run had it), beside cuBLAS, at the graded shapes; prints the
co-resident cluster count the host used. One JSON line per (build, shape).

    python3 lab/bf16-gemm/mc_probe.py            # the driver: runs the four children
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [(4096, 8192, 8192), (8192, 8192, 8192), (16384, 4096, 4096)]


def child():
    import torch
    sys.path.insert(0, os.path.join(HERE, "mc1"))
    import bf16_gemm as m

    def timed(fn, calls=20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1000.0 / calls

    for M, N, K in SHAPES:
        A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        B = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        out = m.bf16_gemm(A, B)
        ref = A @ B.t()
        err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
        mine, cub = [], []
        for _ in range(3):
            mine.append(timed(lambda: m.bf16_gemm(A, B)))
            cub.append(timed(lambda: A @ B.t()))
        mc, cl, maxcl, last = m._mc_info()
        print(json.dumps({"build": os.environ.get("PROBE_BUILD"), "shape": [M, N, K], "us": round(min(mine), 1),
                          "cublas_us": round(min(cub), 1), "relfro": err, "mc": mc, "cluster": cl,
                          "max_clusters": maxcl, "last_clusters": last}), flush=True)
        del A, B, out, ref
        torch.cuda.empty_cache()


def main():
    if os.environ.get("PROBE_BUILD"):
        return child()
    for build, env in (("mc", {"KZOO_MC": "1"}), ("mc_relcluster", {"KZOO_MC": "1", "KZOO_RELCLUSTER": "1"}),
                       ("nomc", {"KZOO_MC": "0"}), ("cuda1", {"KZOO_CLUSTER": "1"})):
        e = dict(os.environ, PROBE_BUILD=build, **env)
        r = subprocess.run([sys.executable, os.path.abspath(__file__)], env=e, timeout=100)
        if r.returncode:
            print(json.dumps({"build": build, "rc": r.returncode}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
