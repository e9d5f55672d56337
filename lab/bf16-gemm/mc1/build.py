# The package's build step (judge's build_test_env.py): compile the kernel now, under the build
# step's own time limit, rather than at first import.
import bf16_gemm  # noqa: F401 - importing it builds the library

if bf16_gemm._lib is None:  # no CUDA here and the build failed: say why
    raise bf16_gemm._lib_error
print("built %s (MC %d, CLUSTER %d, STAGES %d)" % (bf16_gemm._build.NAME, bf16_gemm.MC, bf16_gemm.CLUSTER, bf16_gemm.STAGES))
