"""kzoo_judge: the judge that runs inside the sandbox next to a submitted kernel.

It decides whether a submission is correct and how fast it is, without ever
importing the submitted code into its own process (docs/JUDGE.md).
"""

__version__ = "1"
