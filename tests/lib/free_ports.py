#!/usr/bin/env python3
"""free_ports.py [N]: N distinct free TCP ports (default 1), one line, for a test's servers.

Chosen at random below the kernel's ephemeral range (net.ipv4.ip_local_port_range). Why not
bind(0): that hands out a port from the ephemeral range, where any process's next outgoing
connection can take it between the choice and the server's own bind; a test Slurm cluster's
slurmd lost its port that way on CI (the node stayed "unk*"). Below the range only another
server that chose the same port can collide, and each port is checked free when chosen.
"""

import random
import socket
import sys


def free_ports(n):
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default range starts here
    top = max(low, 10001)
    ports = []
    for _ in range(1000):
        if len(ports) == n:
            return ports
        p = random.randrange(10000, top)
        if p in ports:
            continue
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("0.0.0.0", p))
            except OSError:
                continue
        ports.append(p)
    raise SystemExit("free_ports.py: found %d free ports of the %d asked below %d" % (len(ports), n, top))


if __name__ == "__main__":
    print(*free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
