import triton
import triton.language as tl


def prune(configs, named_args, **kwargs):
    n = named_args["n_cols"]
    return [c for c in configs if c.kwargs["BLOCK"] >= min(n, 1024)]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 512, 1024, 2048, 4096) for w in (2, 4, 8, 16)],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": prune},
    reset_to_zero=["out_ptr"],
)
@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(acc, axis=0))
