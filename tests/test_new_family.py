"""A rule family added in one module plus its registration reaches the estimator, calibration,
the operating-point table, the experiments and the dashboard with no other edit.

The new family is defined and registered in a child process (the registry is per process, so the
rest of the suite keeps the shipped families): the constant family at the nominal error of 1.5 z,
a different rule with the same interface, in ten lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import dataclasses
    import json

    import numpy as np
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    from attentive import AttentiveClassifier, operating_points
    from attentive.families import register_family
    from attentive.families.constant import ConstantFamily

    @register_family
    class WiderConstant(ConstantFamily):
        name = "wider-constant"
        description = "the constant boundary at the nominal error of 1.5 z"

        @staticmethod
        def nominal_delta(z):
            return ConstantFamily.nominal_delta(1.5 * np.asarray(z, dtype=float))

        def boundary(self, z):
            return dataclasses.replace(super().boundary(z), kind=self.name)

    X, y = make_classification(n_samples=900, n_features=10, random_state=3)
    fit, cal, test = slice(0, 400), slice(400, 700), slice(700, None)
    svc = SVC(gamma=0.05).fit(X[fit], y[fit])
    out = {}
    clf = AttentiveClassifier(SVC(gamma=0.05), boundary="wider-constant", delta=0.05, side="both")
    clf.fit(X[fit], y[fit])
    scores = clf.decision_function(X[test])
    out["estimator_kind"] = clf.boundary_.kind
    out["agrees"] = bool((clf.predict(X[test]) == clf.classes_[(scores >= 0).astype(int)]).all())
    out["calibrated_family"] = clf.calibrate(X[cal], delta=0.05, family="wider-constant").calibration_.family
    table = operating_points(clf, X[test], y[test])
    out["operating_points"] = sorted(set(table["family"]))
    from attentive.experiments.compute import family_tradeoffs
    out["experiments"] = sorted(set(family_tradeoffs(clf, X[test])["method"]))
    from attentive.app.state import DashboardState
    state = DashboardState(dataset="breast-cancer")
    out["dashboard_tradeoff"] = sorted(set(state.tradeoff.families["method"]))
    state.set_controls(boundary="wider-constant")
    out["dashboard_rule"] = state.boundary
    out["dashboard_errors"] = state.last_error
    print(json.dumps(out))
    """
)


def test_a_registered_family_appears_everywhere_without_other_edits(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "ATTENTIVE_DATA": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["estimator_kind"] == "wider-constant"
    assert out["agrees"]
    assert out["calibrated_family"] == "wider-constant"
    for where in ("operating_points", "experiments", "dashboard_tradeoff"):
        assert "wider-constant" in out[where], (where, out[where])
    assert out["dashboard_rule"] == "wider-constant" and out["dashboard_errors"] == ""
