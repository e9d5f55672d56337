# The package's build step (run by the judge's build_test_env.py): compile the
# CUDA extension now, under its own time limit, rather than at first import.
import _ext

_ext.load()
print("built %s" % _ext.NAME)
