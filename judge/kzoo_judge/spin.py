"""Spin-waits for the peer's next message around a timed CPU call (channel.keep_off_timing_cpu).

No torch here: the child imports this before torch, once it is pinned to its CPU."""

import select
import time

# How long a spin-wait may last before the waiter falls back to sleeping in the kernel.
SPIN_S = 0.5


def spin_until(fd, deadline_ns):
    """Spin until `fd` is readable (or hung up) or perf_counter_ns passes deadline_ns. One poll
    object for the whole wait: ~2 us a turn, where Connection.poll(0) builds a selector each
    time (~7 us, measured on the 2-vCPU VM)."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    clock = time.perf_counter_ns
    while not p.poll(0) and clock() < deadline_ns:
        pass
