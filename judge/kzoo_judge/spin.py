"""Spin-waits for the peer's next message around a timed CPU call (channel.keep_off_timing_cpu).

No torch here: the child imports this at start, before it pins itself to its CPU and imports torch."""

import select
# Bound at import, before any submitted code runs: a patched time module cannot stop a spin.
from time import perf_counter_ns as _clock

# How long a spin-wait may last before the waiter falls back to sleeping in the kernel.
SPIN_S = 0.5


def spin_until(fd, deadline_ns):
    """Spin until `fd` is readable (or hung up) or perf_counter_ns passes deadline_ns. One poll
    object for the whole wait: ~2 us a turn, where Connection.poll(0) builds a selector each
    time (~7 us, measured on the 2-vCPU VM)."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    while not p.poll(0) and _clock() < deadline_ns:
        pass
