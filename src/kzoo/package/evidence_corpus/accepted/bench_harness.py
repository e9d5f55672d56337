"""Local benchmark helper: prints a table for the shapes given on the command line."""
import argparse

import torch
import triton


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--warmup-ms", type=float, default=25.0, help="warm-up time per shape in ms")
    args = p.parse_args()
    for rows in args.rows:
        x = torch.randn(rows, args.cols, device="cuda", dtype=torch.bfloat16)
        ms = triton.testing.do_bench(lambda: torch.softmax(x, -1), warmup=args.warmup_ms, rep=100)
        print(f"{rows:>6} x {args.cols}: {ms * 1e3:8.1f} us  {gbps(2 * x.numel() * 2, ms):7.1f} GB/s")


if __name__ == "__main__":
    main()
