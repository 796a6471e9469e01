"""Speed benchmark: scikit-learn vs full vs attentive evaluation (see ``attentive.bench``).

Usage: ``python benchmarks/bench_speed.py [--quick] [--datasets ...]``, the same as
``python -m attentive bench``.
"""

import sys

from attentive.bench import main

if __name__ == "__main__":
    sys.exit(main())
