"""What the dashboard exports: the operating point (JSON), the classifier making its decisions
(skops), the table of operating points (CSV) and a Python snippet that reproduces the point.

The classifier is :func:`attentive.app.rules.rule_classifier` itself — the object whose decisions
the dashboard shows — so the export cannot disagree with the page.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from attentive import InvalidParameterError
from attentive.app import rules
from attentive.app.models import CALIBRATION_SIZE, REFERENCE_WALKS, SPLIT_SEED

__all__ = ["classifier", "classifier_bytes", "operating_point", "operating_point_json", "snippet"]


def _round(v, digits: int = 6):
    if isinstance(v, dict):
        return {k: _round(x, digits) for k, x in v.items()}
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return float(f"{float(v):.{digits}g}") if math.isfinite(v) else None
    return v


def _ready(state):
    if state.walks is None or state.figures is None:
        raise InvalidParameterError("no model is loaded yet.")
    return state.walks, state.figures


def classifier(state):
    """The fitted :class:`~attentive.AttentiveClassifier` at the current operating point."""
    walks, _ = _ready(state)
    return rules.rule_classifier(walks, state.rule)


def classifier_bytes(state) -> bytes:
    """:func:`classifier` as a skops file's bytes."""
    import skops.io as sio

    return sio.dumps(classifier(state))


def operating_point(state) -> dict[str, Any]:
    """The current operating point: what it is, where it came from and how it performs."""
    from attentive import __version__
    from attentive.models import model_fingerprint

    walks, f = _ready(state)
    p = walks.problem
    clf = classifier(state)
    side = state.side

    def this_side(items: dict) -> dict:
        # A one-sided rule has no threshold on its other side: leave that τ out.
        return {
            k: v
            for k, v in items.items()
            if not (k == "tau_lower" and side == "upper")
            and not (k == "tau_upper" and side == "lower")
        }

    tau = {k: v for k, v in this_side(f.boundary_params).items() if k.startswith("tau_")}
    source = p.model_source
    point = {
        "dataset": state._applied.get("dataset", state.dataset).removeprefix("file: "),
        "data_hash": p.dataset.fingerprint if hasattr(p.dataset, "fingerprint") else None,
        "model": type(p.model).__name__,
        "model_fingerprint": model_fingerprint(p.model),
        "kernel": None if source.uploaded else source.kind,
        "C": None if source.uploaded else source.C,
        "gamma": None if source.uploaded else source.gamma,
        "rule": state.boundary,
        "side": side,
        "centering": state.centering,
        "reference_walks": walks.classifier.reference_walks_,
        "seed": state.seed,
        "delta": None if state.boundary == "budget" else state.delta,
        "z": None if state.boundary in ("budget", "calibrated") else state.rule.scale,
        "theta": state.theta,
        "theta_s": f.theta_s,
        "tau": tau or None,
        "budget": f.budget,
        "metrics": this_side(f.metrics),
        "attentive_version": __version__,
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    r = clf.calibration_
    if state.boundary == "calibrated" and r is not None:
        point["alpha"] = state.alpha
        point["calibration"] = {
            "family": r.family,
            "z": r.chosen_scale,
            "fallback": r.fallback,
            "guarantee": r.guarantee,
            "n_calibration": r.m,
            "n_fit": len(p.y_fit),
            "calibration_size": CALIBRATION_SIZE,
            "minimum_size": r.minimum_size,
        }
    m = state.measured
    if m is not None:
        point["measured"] = {
            "seconds_attentive": m.seconds,
            "seconds_full": m.full_seconds,
            "wall_clock_speedup": m.time_ratio,
        }
    return _round(point)


def operating_point_json(state) -> str:
    """:func:`operating_point` as JSON."""
    return json.dumps(operating_point(state), indent=2, ensure_ascii=False)


def operating_points_frame(state) -> pd.DataFrame:
    """Every family at every scale on the test set, with the side and θ it was measured at."""
    walks, f = _ready(state)
    trade = f.tradeoff or rules.tradeoff(walks, f.rule.side, f.rule.theta)  # if not there yet
    table = trade.table.copy()
    table.insert(2, "side", state.side)
    table.insert(3, "theta", state.theta)
    # Six significant figures (a nominal δ of 1e-9 stays 1e-9, not 0.0).
    for column in table.select_dtypes("float").columns:
        table[column] = [_round(v) for v in table[column]]
    return table


def operating_points_csv(state) -> io.StringIO:
    """:func:`operating_points_frame` as CSV text."""
    buf = io.StringIO()
    operating_points_frame(state).to_csv(buf, index=False)
    buf.seek(0)
    return buf


def snippet(state) -> str:
    """Python that rebuilds the current rule from scratch and prints the numbers shown."""
    walks, _ = _ready(state)
    p = walks.problem
    src = p.model_source
    rule = state.rule
    name = state._applied.get("dataset", state.dataset)
    if src.uploaded or name.startswith("file: "):
        return (
            "# An uploaded dataset or model: load the exported classifier instead.\n"
            "import skops.io as sio\n"
            'path = "attentive_classifier.skops"\n'
            "clf = sio.load(path, trusted=sio.get_untrusted_types(file=path))\n"
        )
    gamma = repr(src.gamma)
    if rule.kind == "calibrated":
        make_rule = (
            f'rule = clf.with_rule("curved").calibrate(X_cal, delta={rule.delta!r}, '
            f'alpha={rule.alpha!r}, family="auto")'
        )
    elif rule.kind == "budget":
        make_rule = f'rule = clf.with_rule("budget", budget={rule.budget_terms(walks.n_terms)})'
    elif rule.z is not None:
        make_rule = f'rule = clf.with_rule("{rule.kind}", z={rule.z!r})'
    else:
        make_rule = f'rule = clf.with_rule("{rule.kind}", delta={rule.delta!r})'
    return f'''import warnings

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from attentive import AttentiveClassifier
from attentive.data import load_dataset
from attentive.models import make_model

ds = load_dataset("{name}")
X_fit, X_cal, y_fit, y_cal = train_test_split(
    ds.X_train, ds.y_train, test_size={CALIBRATION_SIZE}, stratify=ds.y_train,
    random_state={SPLIT_SEED},
)
model = make_model("{src.kind}", C={src.C!r}, gamma={gamma}).fit(X_fit, y_fit)
clf = AttentiveClassifier(
    FrozenEstimator(model), side="{rule.side}", threshold={rule.theta!r},
    centering="{state.centering}", reference_walks="{REFERENCE_WALKS}",
    random_state={state.seed}, early_stopping=True,
).fit(X_fit, y_fit)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    {make_rule}
early = rule.evaluate(ds.X_test)
full = clf.with_rule("full").evaluate(ds.X_test)
truth = np.asarray(ds.y_test) == clf.classes_[1]
print("mean fraction of terms", round(early.n_evaluated.mean() / clf.n_terms_, 4))
print("disagreement", round(float(np.mean(early.positive != full.positive)), 4))
print("accuracy", round(float(np.mean(early.positive == truth)), 4))
'''
