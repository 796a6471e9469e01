"""Time to the app's default model: ``load_dataset("digits-2v5")`` plus training it, cold and warm.

Measured in one run, side by side (median of repeats, each cold repeat with empty caches):

- ``cold``: load the dataset with the in-process cache cleared and train the default model with the
  disk cache off — what a first visit costs (the target is under 5 s);
- ``warm``: the same call again with the in-process dataset cache and the on-disk model cache —
  what reopening costs;
- the offline problems' default models (size of the model in terms, fit time), including the
  ``synthetic`` size documented to give about 1,000 RBF support vectors with 10,000 test examples.

Run: ``PYTHONPATH=. python benchmarks/bench_default_model.py [--repeats N]``. The last line
printed is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np

from attentive.data import clear_cache, load_dataset
from attentive.models import default_model_params, train_model


def _time(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results: dict = {}

    with tempfile.TemporaryDirectory() as cache_dir:

        def cold():
            clear_cache()
            ds = load_dataset("digits-2v5")
            return train_model(ds, **default_model_params(ds.name), cache=False)

        def warm():
            ds = load_dataset("digits-2v5")
            return train_model(ds, **default_model_params(ds.name), cache_dir=cache_dir)

        cold_s, model = _time(cold, args.repeats)
        warm()  # fill the disk cache once
        warm_s, _ = _time(warm, args.repeats)
    results["digits-2v5"] = {
        "cold_s": cold_s,
        "warm_s": warm_s,
        "cold_over_warm": cold_s / warm_s,
        "support_vectors": int(model.support_.size),
    }
    print(f"digits-2v5 default model ({default_model_params('digits-2v5')}):")
    print(f"  cold: load + train  {cold_s * 1e3:8.1f} ms   (target < 5000 ms)")
    print(f"  warm: reopen cached {warm_s * 1e3:8.1f} ms   ratio cold/warm {cold_s / warm_s:.1f}")
    print(f"  {model.support_.size} support vectors")

    cases = [
        ("breast-cancer", {}),
        ("synthetic", {}),
        ("synthetic", {"n_train": 3500, "n_test": 10000}),
        ("synthetic-sparse", {}),
    ]
    print("\noffline defaults: dataset, params, load s, fit s, terms")
    for name, params in cases:
        clear_cache()
        load_s, ds = _time(lambda n=name, p=params: load_dataset(n, **p), 1)
        fit_s, fitted = _time(
            lambda d=ds: train_model(d, **default_model_params(d.name), cache=False), 1
        )
        support = getattr(fitted, "support_", None)
        terms = int(support.size) if support is not None else ds.n_features
        key = name + "".join(f" {k}={v}" for k, v in params.items())
        results[key] = {"load_s": load_s, "fit_s": fit_s, "terms": terms}
        print(f"  {key:<40} {load_s:6.3f} {fit_s:6.3f} {terms:6d}")
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
