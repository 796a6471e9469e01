"""Stopping rules against the oracle, tuned and calibrated: see :mod:`attentive.bench_rules`.

Run: ``PYTHONPATH=. python benchmarks/bench_rules.py [--problems NAME ...] [--no-sizes]``
(also ``python -m attentive bench rules``). The last line printed is one JSON object.
"""

import sys

from attentive.bench_rules import main

if __name__ == "__main__":
    sys.exit(main())
