"""The dtype names a task may use, without torch.

Why a module of its own: reading a task (task.py) needs only the names, and the build step
(build_test_env.py, a process of its own in its own sandbox) only reads the task; importing
torch there cost seconds of every grade (docs/PERF.md). dtypes.py maps the names to torch.
"""

NATIVE = ("bfloat16", "float16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
ALL = NATIVE + FLOAT8
