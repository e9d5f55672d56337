# The package's build step (judge's build_test_env.py): compile the kernel now, under the build
# step's own time limit, rather than at first import.
import fp8_blockscale_gemm  # noqa: F401 - importing it builds the library

print("built %s" % fp8_blockscale_gemm._build.NAME)
