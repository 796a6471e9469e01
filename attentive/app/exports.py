"""What the dashboard exports: the operating point (JSON), the classifier making its decisions
(skops), the table of operating points (CSV) and a Python snippet that reproduces the point.

The classifier is :func:`attentive.app.rules.rule_classifier` itself — the object whose decisions
the dashboard shows — so the export cannot disagree with the page.
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from attentive import InvalidParameterError
from attentive.app import controls, rules, sketches
from attentive.app.models import (
    CALIBRATION_ALPHA,
    CALIBRATION_DELTA,
    GAMMA_KERNELS,
    REFERENCE_WALKS,
    SPLIT_SEED,
)

__all__ = ["classifier", "classifier_bytes", "operating_point", "operating_point_json", "snippet"]

# An uploaded model's calibration, in the exported operating point: the scan's sentence states a
# guarantee, which a model fitted elsewhere (perhaps on the examples held out here) does not have.
UPLOADED_NO_GUARANTEE = (
    "None: the model was uploaded, fitted elsewhere, perhaps on the very examples held out here "
    "to calibrate. The scale is what the scan chose on them; its disagreement is a measurement, "
    "not a bound."
)
# The same where no scale passed the scan (too few held-out examples, say): the rule is full
# evaluation, and no scale was chosen (a user's trial read "the scale is what the scan chose").
UPLOADED_NO_SCALE = (
    "None: the model was uploaded, fitted elsewhere, perhaps on the very examples held out here "
    "to calibrate. No scale passed the scan on them: the rule is full evaluation."
)


def _settings(p) -> dict[str, Any]:
    """The model's kernel, C and gamma: a trained model's settings, an uploaded model's own
    where it has them (its kind is its class, ``model``; γ only for the kernels that use it)."""
    source = p.model_source
    if not source.uploaded:
        return {"kernel": source.kind, "C": source.C, "gamma": source.gamma}
    kernel = p.params.get("kernel")
    gamma = p.params.get("gamma") if kernel in GAMMA_KERNELS else None
    return {"kernel": kernel, "C": _plain(p.params.get("C")), "gamma": _plain(gamma)}


def _round(v, digits: int = 6):
    if isinstance(v, dict):
        return {k: _round(x, digits) for k, x in v.items()}
    if isinstance(v, list | tuple):  # (an interval, a range: as rounded as the rest)
        return [_round(x, digits) for x in v]
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return float(f"{float(v):.{digits}g}") if math.isfinite(v) else None
    return v


def _ready(state):
    if state.walks is None:
        raise InvalidParameterError("no model is loaded yet.")
    return state.walks


def classifier(state):
    """The fitted :class:`~attentive.AttentiveClassifier` at the current operating point. A
    calibrated rule's parameters say so (``boundary="calibrated"``, its family, δ and α), as a
    classifier fitted with them would: the rule was calibrated on a curved classifier's walk,
    whose parameters (curved, δ = 5 %) a clone or a refit would take otherwise."""
    clf = rules.rule_classifier(_ready(state), state.rule)
    report = clf.calibration_
    if state.boundary != "calibrated" or report is None:
        return clf
    clf = copy.copy(clf)  # (the dashboard's cached classifier keeps its own)
    return clf.set_params(
        boundary="calibrated",
        family=report.family if not report.fallback else "auto",
        delta=report.delta,
        alpha=report.alpha,
    )


#: The budget field's lowest share of the terms.
BUDGET_LOW = controls.Controls.param.budget.bounds[0]

#: The settings of every classifier the page makes (:func:`classifier`), beside its rule: a
#: classifier fitted with others walks its rule otherwise than the page would.
PAGE_SETTINGS = {
    "order": "random",
    "variance": "terms",
    "stopped_score": "estimate",
    "calibration_size": "auto",
    "sketch": "auto",
    "sketch_order": "residual",
}


def exported_settings(clf) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What an exported classifier (:func:`classifier`) was exported at, as the page's controls:
    ``(model inputs, rule controls, settings the page does not make)`` — its centring and seed
    (the walk), and its rule, side, threshold and scale (δ and α for the calibrated rule, z for a
    family's, the budget as a share of the terms). No rule where ``clf`` is not a fitted
    AttentiveClassifier, names a rule the page does not have, or was fitted with settings the
    page does not make (those are listed, as ``name=value``)."""
    from attentive import AttentiveClassifier

    if not isinstance(clf, AttentiveClassifier) or not hasattr(clf, "boundary_"):
        return {}, {}, []
    p = clf.get_params(deep=False)
    kind = p["boundary"]
    if kind not in rules.kinds():
        return {}, {}, [f"boundary={kind!r}"]
    others = [f"{k}={p[k]!r}" for k, v in PAGE_SETTINGS.items() if p.get(k) != v]
    if getattr(clf, "reference_walks_", None) != REFERENCE_WALKS:
        others.append(f"reference_walks={getattr(clf, 'reference_walks_', None)!r}")
    if others:
        return {}, {}, others
    model = {"centering": p["centering"]}
    if isinstance(p["random_state"], int | np.integer):
        model["seed"] = int(p["random_state"])
    rule: dict[str, Any] = {"boundary": kind, "side": p["side"], "theta": float(p["threshold"])}
    if kind == "calibrated":
        rule.update(delta=float(p["delta"]), alpha=float(p["alpha"]))
        if p["family"] != "auto":  # (calibration here chooses among every family: said where
            rule["family"] = p["family"]  # it chooses another, state._exported_rule)
    elif kind == "budget":  # (the share of the terms the page's budget gives that many for)
        terms, n = int(clf.boundary_.budget), int(clf.n_terms_)
        shares = [round(terms / n, digits) for digits in (2, 3, 4)] + [(terms - 1e-6) / n]
        fits = [f for f in shares if math.ceil(f * n) == terms and BUDGET_LOW <= f <= 1.0]
        if not fits:
            return model, {}, [f"budget={terms} of {n:,} terms"]
        rule["budget"] = fits[0]
    else:  # (a family's rule at scale z: its δ is Φ(−z), with_rule's own)
        rule["z"] = rules.z_of(float(p["delta"]))
    return model, rule, []


def classifier_bytes(state) -> bytes:
    """:func:`classifier` as a skops file's bytes."""
    import skops.io as sio

    from attentive.models.persistence import check_loadable_size

    data = sio.dumps(classifier(state))
    check_loadable_size(data)  # (the page loads it back, as score and load_model do)
    return data


def operating_point(state) -> dict[str, Any]:
    """The current operating point: what it is, where it came from and how it performs."""
    from attentive import __version__
    from attentive.models import model_fingerprint

    walks = _ready(state)
    p = walks.problem
    clf = classifier(state)
    side = state.side
    metrics = state.numbers()
    ds = p.dataset

    def this_side(items: dict) -> dict:
        # A one-sided rule has no threshold on its other side: leave that τ out.
        return {
            k: v
            for k, v in items.items()
            if not (k == "tau_lower" and side == "upper")
            and not (k == "tau_upper" and side == "lower")
        }

    tau = {k: v for k, v in this_side(metrics).items() if k.startswith("tau_")}
    point = {
        "dataset": state.walks_dataset.removeprefix("file: "),
        "data_hash": ds.fingerprint if hasattr(ds, "fingerprint") else None,
        # Which label the decisions call positive, in the dataset's words and as the model's class.
        "positive_class": ds.positive_meaning,
        "classes": {"negative": _plain(clf.classes_[0]), "positive": _plain(clf.classes_[1])},
        # What the classes are in the data's own words (an uploaded file's labels: a model
        # trained here was trained on 0 / 1, so its predictions are those; an uploaded model
        # fitted on the file's labels predicts them).
        "class_names": {"negative": ds.class_names[0], "positive": ds.class_names[1]},
        "model": type(p.model).__name__,
        "model_fingerprint": model_fingerprint(p.model),
        **_settings(p),
        "rule": state.boundary,
        "side": side,
        "centering": state.centering,
        "reference_walks": walks.classifier.reference_walks_,
        "seed": state.seed,
        # A family's δ' = Φ(−z) of its scale, exactly (the slider shows it on its grid, and a
        # rule rebuilt from the slider's δ is another); calibrated: the guarantee's δ.
        "delta": (
            None
            if state.boundary == "budget"
            else state.delta
            if state.boundary == "calibrated"
            else rules.nominal_delta(state.rule.scale)
        ),
        "z": None if state.boundary in ("budget", "calibrated") else state.rule.scale,
        "theta": state.theta,
        "theta_s": metrics["theta_s"],
        "tau": tau or None,
        "budget": metrics["budget"],
        "metrics": {
            k: v for k, v in this_side(metrics).items() if not k.startswith("tau") and k != "budget"
        },
        "attentive_version": __version__,
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    if rules.is_sketched(state.rule.kind):
        sketch = sketches.sketch(walks)
        s = clf.sketched_walk_.sketch
        point["sketch"] = {
            "k": int(s.k),
            "m": int(s.m),
            "sketch_cost": sketch.sketch_cost,
            "walked_term_cost": sketch.term_cost,
            "chosen_at": {"delta": sketches.SKETCH_DELTA, "side": sketches.SKETCH_SIDE},
        }
    r = clf.calibration_
    if state.boundary == "calibrated" and r is not None:
        point["alpha"] = state.alpha
        point["calibration"] = {
            "family": r.family,
            "z": r.chosen_scale,
            "fallback": r.fallback,
            "guarantee": (
                (UPLOADED_NO_SCALE if r.fallback else UPLOADED_NO_GUARANTEE)
                if p.fitted_elsewhere
                else r.guarantee
            ),
            "n_calibration": r.m,
            "n_fit": len(p.y_fit),
            "minimum_size": r.minimum_size,
            # An uploaded model may have seen the held-out examples: no guarantee then (but for
            # the page's own model uploaded back).
            "guaranteed": not p.fitted_elsewhere and not r.fallback,
            # What the calibration set shows beside the guarantee (the rarer decision).
            "notes": list(r.notes),
        }
    if state.still_picked():
        # What chose this rule: the target or the time budget the page was given.
        point["picked_by"] = {
            k: getattr(state, k) for k in ("target", "time_budget") if getattr(state, k) is not None
        }
    m = state.measured
    if m is not None:
        lo, hi = m.ratio_spread
        point["measured"] = {
            "seconds_attentive": m.seconds,
            "seconds_full": m.full_seconds,
            "us_per_example": m.us_per_example,
            "wall_clock_speedup": m.time_ratio,
            "wall_clock_speedup_range": [lo, hi],
            # False: the rounds stayed far apart (a busy machine); the ratio says little.
            "wall_clock_steady": m.steady,
        }
    return _round(point)


def _plain(v):
    """A class label as JSON holds it (numpy scalars become Python ones)."""
    return v.item() if isinstance(v, np.generic) else v


def operating_point_json(state) -> str:
    """:func:`operating_point` as JSON."""
    return json.dumps(operating_point(state), indent=2, ensure_ascii=False)


def operating_points_frame(state) -> pd.DataFrame:
    """Every family at every scale on the test set, with the side and θ it was measured at."""
    walks = _ready(state)
    # The table as the page shows it, with the time per example (computed if not there yet).
    key = (walks, state.side, state.theta, state.sketched)
    table = rules.timed_table(rules.tradeoff(*key), rules.rule_times(*key)).copy()
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


_PRINT_NUMBERS = """truth = np.asarray(ds.y_test) == 1  # the dataset codes its positive class 1
frac = early.n_evaluated.mean() / clf.n_terms_
print("mean fraction of terms", round(frac, 4))
# With a sketch, the work per example counts it too (full evaluations).
print("work per example", round(early.work_fraction, 4))
differ = np.mean(early.positive != full.positive)
print("disagreement", round(float(differ), 4))
right = np.mean(early.positive == truth)
print("accuracy", round(float(right), 4))
"""


def _upload_snippet(state, name: str, uploaded_model: bool, at: str) -> str:
    """An uploaded file or model: the exported classifier, on the uploaded file split as on the
    page (``load_user_file``; for an uploaded model the file is read for it, as here)."""
    filename = name.removeprefix("file: ") if name.startswith("file: ") else None
    positive = state.positive_class.strip() or None
    if filename is None:  # a registry dataset with an uploaded model
        data = f'ds = load_dataset("{name}")'
        imports = "from attentive.data import load_dataset"
    else:
        options = "" if positive is None else f", positive_class={positive!r}"
        options += ", model=clf" if uploaded_model else ""
        data = (
            "# The file you uploaded (its path here), split into train and test as on the page.\n"
            f"ds = load_user_file({filename!r}{options})"
        )
        imports = "from attentive.data import load_user_file"
    return (
        f"""import numpy as np

{imports}
from attentive.models import load_model

# The classifier exported from the page (skops, trusting only the types an exported
# classifier holds): the model and the rule as shown.
clf = load_model("attentive_classifier.skops")
{data}
early = clf.evaluate(ds.X_test)
full = clf.with_rule("full", {at}).evaluate(ds.X_test)
"""
        + _PRINT_NUMBERS
    )


def snippet(state) -> str:
    """Python that rebuilds the current rule from scratch and prints the numbers shown."""
    walks = _ready(state)
    p = walks.problem
    src = p.model_source
    rule = state.rule
    name = state.walks_dataset
    at = f'side="{rule.side}", threshold={rule.theta!r}'
    if src.uploaded or name.startswith("file: "):
        return _upload_snippet(state, name, src.uploaded, at)
    gamma = repr(src.gamma)
    if rule.kind == "calibrated":
        make_rule = (
            f'rule = clf.with_rule("curved", {at}).calibrate(\n        X_cal, '
            f'delta={rule.delta!r}, alpha={rule.alpha!r}, family="auto"\n    )'
        )
    elif rule.kind == "budget":
        make_rule = (
            f'rule = clf.with_rule(\n        "budget", {at},\n'
            f"        budget={rule.budget_terms(walks.n_terms)},\n    )"
        )
    elif rules.is_sketched(rule.kind):
        make_rule = (
            "# The sketch's size (or none) is chosen on the fit examples, as on the page.\n"
            f'    sketched = clf.with_rule("constant", side="{sketches.SKETCH_SIDE}", '
            f"delta={sketches.SKETCH_DELTA!r})\n"
            "    sketched.fit_sketch(X_fit, y_fit)\n"
            f'    rule = sketched.with_rule(\n        "{rule.kind}", {at},\n'
            f"        z={rule.scale!r},\n    )"
        )
    else:
        make_rule = (
            f'rule = clf.with_rule(\n        "{rule.kind}", {at},\n        z={rule.scale!r},\n    )'
        )
    return (
        f'''import warnings

import numpy as np
from sklearn.frozen import FrozenEstimator

from attentive import AttentiveClassifier
from attentive.data import load_dataset
from attentive.estimator import calibration_split
from attentive.models import make_model

ds = load_dataset("{name}")
# The estimator's own calibration hold-out (as boundary="calibrated").
X_fit, X_cal, y_fit, y_cal = calibration_split(
    ds.X_train, ds.y_train, delta={CALIBRATION_DELTA},
    alpha={CALIBRATION_ALPHA}, random_state={SPLIT_SEED},
)
model = make_model("{src.kind}", C={src.C!r}, gamma={gamma})
model.fit(X_fit, y_fit)
# Fitted once (centering, order, reference walks); every rule is
# then with_rule on it, as on the page.
clf = AttentiveClassifier(
    FrozenEstimator(model), centering="{state.centering}",
    reference_walks="{REFERENCE_WALKS}",
    random_state={state.seed}, early_stopping=True,
).fit(X_fit, y_fit)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    {make_rule}
early = rule.evaluate(ds.X_test)
full = clf.with_rule("full", {at}).evaluate(ds.X_test)
'''
        + _PRINT_NUMBERS
    )
