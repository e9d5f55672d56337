# The package's build step (judge's build_test_env.py): compile the kernel now, under the build
# step's own time limit, rather than at first import.
import flash_attention  # noqa: F401 - importing it builds the library

print("built %s" % flash_attention._build.NAME)
