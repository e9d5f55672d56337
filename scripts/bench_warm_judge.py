#!/usr/bin/env python3
"""The judge's clock of a job handed to a judge started ahead of it (kzoo_judge.warm), on the CPU.

Three jobs of tests.test_warm's softmax, each handed over 1 s after its files are laid out, as a
worker hands a job to the judge it started when the last one ended. Prints, per job, the judge's
clock and the "other" it could not place before its child was ready (docs/PERF.md, "The judge's
exit"). Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 scripts/bench_warm_judge.py
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "judge"))

from tests import helpers as h  # noqa: E402
from tests.test_warm import Warm  # noqa: E402


def main():
    for _ in range(3):
        w = Warm(ab=False)
        try:
            w.fill(h.GOOD_SOFTMAX, h.softmax_task())
            time.sleep(1.0)
            rc, _, err, _ = w.go(w.job(os.urandom(32)))
        finally:
            w.close()
        ready = re.search(r"child ready \(wall ([0-9.]+) s.*?other ([0-9.]+) s", err)
        clock = re.search(r"kzoo-judge: time: wall ([0-9.]+) s", err)
        print("rc %d  judge's clock %s s  child ready after %s s, of which other %s s" % (
            rc, clock.group(1) if clock else "?", ready.group(1) if ready else "?", ready.group(2) if ready else "?"))


if __name__ == "__main__":
    main()
