"""The sketch of the score behind the dashboard's sketched rules (SPEC §3b), fitted on demand.

A sketched rule (``sketched-curved``, …) first computes a cheap approximation of every term for
the whole row — a Nyström sketch of the RBF kernel — and then walks only what the sketch got
wrong, starting at the sketch's score ``F̃(x)``. The classifier chooses the sketch's size, or
none, on its reference (fit) examples (:meth:`~attentive.AttentiveClassifier.fit_sketch`): a walk
per candidate size, 1–4 s on the offline problems. So the dashboard fits it only when asked (a
sketched rule chosen, *Fit a sketch*, the guided tour), never on the first page or a slider's
path, once per walk (:func:`sketch`, shared by every session). Where no sketch can be fitted (not
an RBF model on dense rows) that is known without fitting (:func:`unavailable`); where the choice
says none pays, :attr:`Sketch.reason` says why in plain words and the sketched rules are absent.

Costs are in units of a full evaluation, as the evaluator reports them
(:attr:`attentive.Evaluation.work_fraction`): a row's sketch, plus each exact term walked at
``1 + m/d`` plain terms. The choice itself weighs the candidates with the evaluator's measured
costs where the rule would be walked (the least work by the count where the evaluator's pilot
predicts its walk no slower), and by the count where it would not (``sketch_choice_``,
``sketch_costs_``); :attr:`Sketch.options` lists them at the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from attentive.app.cache import shared
from attentive.app.models import CALIBRATION_DELTA, Walks, frozen

__all__ = [
    "SKETCH_DELTA",
    "SKETCH_SIDE",
    "Sketch",
    "known",
    "note",
    "sketch",
    "summary",
    "unavailable",
]

#: The disagreement and side the sketch's size is chosen for: the dashboard's default rule.
SKETCH_DELTA = CALIBRATION_DELTA
SKETCH_SIDE = "both"


@dataclass(frozen=True)
class Sketch:
    """A walk's sketch, or why it has none.

    Attributes
    ----------
    classifier : AttentiveClassifier or None
        The walk's classifier with its sketch (``sketched_walk_``): every sketched rule is its
        ``with_rule``. None where no sketch pays or none can be fitted.
    reason, detail : str
        Why there is no sketch, in a few plain words and in a sentence with the numbers ("" when
        there is one).
    options : DataFrame or None
        The candidates the choice weighed (``sketch``, ``sketch_cost``, ``term_cost``,
        ``walked_fraction``, ``total``; the evaluator's measured costs; ``count_only``: weighed
        by the count only), None when none could be fitted.
    start, S, A : ndarray or None, read-only
        On the test set: the sketch's score ``F̃(x)``, the residual walks ``S^ρ_t(x)`` (column
        ``t − 1``), what the walks plot draws for a sketched rule, and their running masses
        ``A_t`` (the exact terms' in the sketched walk's own order).
    """

    classifier: object | None = None
    reason: str = ""
    detail: str = ""
    options: pd.DataFrame | None = field(default=None, repr=False)
    start: np.ndarray | None = field(default=None, repr=False)
    S: np.ndarray | None = field(default=None, repr=False)
    A: np.ndarray | None = field(default=None, repr=False)

    @property
    def pays(self) -> bool:
        return self.classifier is not None

    @property
    def _walk(self):
        return self.classifier.sketched_walk_

    @property
    def label(self) -> str:
        """``k = 8, m = 64``: principal directions and landmarks."""
        s = self._walk.sketch
        return f"k = {s.k}, m = {s.m}"

    @property
    def named(self) -> str:
        """``k = 8 principal directions, m = 64 landmarks``: :attr:`label` in words."""
        s = self._walk.sketch
        directions = self.directions if s.k != 1 else self.directions[:-1]
        return f"k = {s.k} {directions}, m = {s.m} landmark{'s' if s.m != 1 else ''}"

    @property
    def directions(self) -> str:
        """What its k are: principal directions, or coordinates (rows already decorrelated,
        as behind a PCA: :data:`attentive.sketch.nystrom.AXIS_SHARE`)."""
        return "coordinates" if self._walk.sketch.on_coordinates else "principal directions"

    @property
    def sketch_cost(self) -> float:
        """A row's sketch in units of a full evaluation (``Evaluation.sketch_cost``)."""
        return float(self._walk.cost)

    @property
    def term_cost(self) -> float:
        """A walked term in plain terms, ``1 + m/d`` (``Evaluation.walked_term_cost``)."""
        return float(self._walk.walked_term_cost)

    def work(self, fraction):
        """The work of a sketched rule that walks ``fraction`` of the terms, in full
        evaluations: the sketch plus the walked terms (``Evaluation.work_fraction``)."""
        return self.sketch_cost + np.asarray(fraction, dtype=np.float64) * self.term_cost


def unavailable(walks: Walks) -> Sketch | None:
    """The :class:`Sketch` saying why none can be fitted for ``walks``' model, known without
    fitting; None when one can be tried."""
    from attentive.sketch import sketch_available

    terms = walks.classifier.terms_
    if sketch_available(terms, walks.problem.X_fit):
        return None
    if terms.kind == "kernel" and terms.kernel == "rbf":
        what = "its rows are sparse"
    elif terms.kind == "kernel":
        what = f"this model's kernel is {terms.kernel!r}"
    else:
        what = f"this model is {walks.problem.description} ({terms.kind} terms)"
    return Sketch(
        reason="a sketch needs an RBF kernel on dense rows",
        detail=f"the sketch approximates an RBF kernel's terms (SPEC §3b), and {what}.",
    )


def _options(choice) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sketch": [o.label for o in choice.options],
            "sketch_cost": [o.sketch_cost for o in choice.options],
            "term_cost": [o.term_cost for o in choice.options],
            "walked_fraction": [o.walked_fraction for o in choice.options],
            "total": [o.total for o in choice.options],
            # The smaller sizes weighed by the count only (attentive.sketch.COUNT_SIZES).
            "count_only": [o.count_only for o in choice.options],
        }
    )


def _none(options: pd.DataFrame, n_features: int) -> Sketch:
    """The :class:`Sketch` of a choice that kept no sketch, with its numbers."""
    plain, sketched = options.iloc[0], options.iloc[1:]
    if sketched.empty:
        return Sketch(
            reason="no sketch size fits this model",
            detail=f"with {n_features} features and so few rows there is no sketch to try (it "
            "needs fewer principal directions than features, and landmarks among the rows).",
            options=options,
        )
    # The best the measured costs rank (not the sizes weighed by the count only, which
    # choose_sketch tries only beside a default size).
    ranked = sketched[~sketched["count_only"]]
    best = ranked.loc[ranked["total"].idxmin()]
    return Sketch(
        reason="no sketch pays for this model",
        detail="on the reference examples, the cheapest rule at disagreement ≤ "
        f"{SKETCH_DELTA:.0%} costs {plain['total']:.2f} of a full evaluation without a sketch and "
        f"{best['total']:.2f} with the best one ({best['sketch']}: {best['sketch_cost']:.2f} for "
        f"the sketch, then {best['walked_fraction']:.2f} of the terms walked at "
        f"{best['term_cost']:.2f} each; the evaluator's measured costs).",
        options=options,
    )


@shared(key=lambda walks: walks.key, max_items=6)
def sketch(walks: Walks) -> Sketch:
    """Choose the sketch of ``walks``' classifier on its fit examples (or say why there is
    none), and walk the test set after it. Computed once per walk, even when several sessions
    ask at once."""
    none = unavailable(walks)
    if none is not None:
        return none
    p = walks.problem
    clf = walks.classifier.with_rule("constant", side=SKETCH_SIDE, delta=SKETCH_DELTA)
    # fit_sketch adds the sketched families to the reference profile; with_rule's copy shares
    # that dict with the cached classifier, whose calibrated rule must keep the plain families.
    clf.reference_profile_ = dict(clf.reference_profile_)
    clf.fit_sketch(p.X_fit, p.y_fit)
    options = _options(clf.sketch_choice_)
    if clf.sketched_walk_ is None:
        return _none(options, walks.classifier.n_features_in_)
    X = walks.X_test
    S, A = clf.sketched_walk_.partial_scores_and_masses(X)
    return Sketch(
        classifier=clf,
        options=options,
        start=frozen(clf.sketched_walk_.start_scores(X), dtype=np.float64),
        S=frozen(S, dtype=np.float64),
        A=frozen(A, dtype=np.float64),
    )


def known(walks: Walks | None) -> Sketch | None:
    """What is known of ``walks``' sketch without fitting one: the fitted :class:`Sketch`, one
    saying why none can be fitted, or None (not fitted yet)."""
    if walks is None:
        return None
    return sketch.peek(walks) or unavailable(walks)


def summary(sketch: Sketch | None, fitting: bool = False) -> str:
    """One short line on where the sketched rules are (the tradeoff plot's caption)."""
    if fitting:
        return "Fitting a sketch of the score for the sketched rules…"
    if sketch is None:
        return "Sketched rules: not fitted for this model yet (sidebar: Fit a sketch)."
    if not sketch.pays:
        return f"No sketched rules: {sketch.reason} (the sidebar says why)."
    return (
        f"Dashed: the sketched rules ({sketch.label}), at the sketch's {sketch.sketch_cost:.3f} "
        f"+ the terms walked × {sketch.term_cost:.2f}."
    )


def note(sketch: Sketch | None, fitting: bool = False) -> str:
    """What the sidebar says about the sketched rules of the walk in use (Markdown)."""
    if fitting:
        return (
            "**Sketched rules**: fitting a sketch of the score on the reference examples (its "
            "size, or none, is chosen by its cost; a few seconds)…"
        )
    if sketch is None:
        return (
            "**Sketched rules** (a cheap sketch of the whole score first, then a walk over what "
            "it got wrong): not fitted for this model yet. Fitting takes a few seconds; choosing a "
            "sketched rule fits it too."
        )
    if not sketch.pays:
        return f"**No sketched rules**: {sketch.reason}: {sketch.detail}"
    return (
        f"**Sketched rules**: a sketch with {sketch.label} ({sketch.directions}, landmarks) "
        "was chosen on the reference examples. A row's sketch costs "
        f"{sketch.sketch_cost:.3f} of a full evaluation and each term walked after it costs "
        f"{sketch.term_cost:.2f} plain terms: their work on the tradeoff plot and in the table."
    )
