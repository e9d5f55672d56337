"""Builds the test environment under the runner's workdir: inputs, expected outputs, the extension."""
import os
import subprocess
import sys

import torch


def main(workdir: str) -> None:
    os.makedirs(workdir, exist_ok=True)
    g = torch.Generator().manual_seed(20261201)
    for rows, cols in [(4096, 4096), (8192, 16384)]:
        x = torch.randn(rows, cols, generator=g).to(torch.bfloat16)
        torch.save({"x": x}, os.path.join(workdir, f"inputs_{rows}x{cols}.pt"))
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=os.path.dirname(__file__), check=True)


if __name__ == "__main__":
    main(sys.argv[1])
