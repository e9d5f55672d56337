import triton
import triton.language as tl

# ncu --section SpeedOfLight on 8192x8192:
#   Section: GPU Speed Of Light Throughput
#   DRAM Frequency                 cycle/nsecond        2.62
#   SM Frequency                   cycle/usecond        1.75
#   Elapsed Cycles                         cycle     724,133
#   Memory Throughput                          %       91.12
#   Duration                             usecond      412.29


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
