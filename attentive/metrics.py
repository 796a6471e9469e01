"""What is measured (SPEC §4): evaluated fraction, stop-error, disagreement, tradeoff curves, PR.

The attentive sweep over all constant thresholds τ uses the ``searchsorted`` formulation: for a
lower τ, an example stops at the first ``t < n`` where its running minimum of ``S_t`` drops below τ,
so the number of terms it evaluates is ``1 + #{t < n : min_{k≤t} S_k ≥ τ}``. Summed over examples
that is a count over one sorted array of running minima, so after one sort (cached in
:class:`AttentiveSweep`) any number of τ values costs ``O(taus × log(examples × n))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attentive.validation import check_side

__all__ = [
    "AttentiveSweep",
    "PRCurve",
    "TradeoffCurve",
    "attentive_tradeoff",
    "budgeted_tradeoff",
    "disagreement_rate",
    "mean_evaluated_fraction",
    "precision_recall",
    "stop_error",
]


def mean_evaluated_fraction(n_evaluated, n_terms: int) -> float:
    """Mean of ``n_evaluated / n`` (SPEC §4). Speed-up in evaluations is its inverse."""
    n_evaluated = np.asarray(n_evaluated)
    if n_evaluated.size == 0 or n_terms <= 0:
        return float("nan")
    return float(n_evaluated.mean() / n_terms)


def stop_error(early_positive, full_positive, side: str = "lower") -> float:
    """The paper's conditional stop-error (SPEC §4).

    ``lower``: the fraction of full-positive examples that the early rule calls negative,
    ``#(stopped ∧ F) / #F``; ``upper``: the fraction of full-negative examples called positive;
    ``both``: the two kinds of error over all examples (equal to :func:`disagreement_rate`).
    NaN when the conditioning class is empty. Both arguments say whether each example is
    called positive (booleans, or 0 and 1); class labels, text or decision values raise a
    ValueError (read as booleans, every non-zero label would be positive).
    """
    check_side(side)
    e, f = _positives(early_positive, full_positive)
    if side == "lower":
        return float(np.sum(~e & f) / np.sum(f)) if f.any() else float("nan")
    if side == "upper":
        return float(np.sum(e & ~f) / np.sum(~f)) if (~f).any() else float("nan")
    return disagreement_rate(e, f)


def disagreement_rate(early_positive, full_positive) -> float:
    """``#(early decision ≠ full decision) / #examples`` (SPEC §4), of booleans (or 0 and 1)
    saying whether each example is called positive: anything else raises a ValueError."""
    e, f = _positives(early_positive, full_positive)
    return float(np.mean(e != f)) if e.size else float("nan")


def _zero_one(v) -> bool:
    try:
        return v in (0, 1) and not isinstance(v, str)
    except (TypeError, ValueError):  # (an object that does not compare: not a decision)
        return False


def _positives(early_positive, full_positive) -> tuple[np.ndarray, np.ndarray]:
    """Both arguments as boolean vectors of one length: whether each example is called
    positive. Booleans, or numbers that are all 0 or 1; anything else — class labels such as
    2 and 5 or -1 and +1, strings, decision values — is refused, as reading it as booleans
    would call every non-zero value positive and find every pair in agreement."""
    out = []
    for name, values in (("early_positive", early_positive), ("full_positive", full_positive)):
        a = np.asarray(values)
        if a.ndim != 1:
            raise ValueError(
                f"{name} must be a 1-D array (one value per example); got shape {a.shape}"
            )
        if a.dtype != bool:
            # (numbers 0 / 1, or objects each a bool or 0 / 1: True, np.True_, 1.0)
            if a.dtype.kind in "iuf":
                ok = np.isin(a, (0, 1))
            elif a.dtype.kind == "O":
                ok = np.array(
                    [isinstance(v, bool | np.bool_) or _zero_one(v) for v in a.tolist()], dtype=bool
                )
            else:
                ok = np.zeros(a.shape, dtype=bool)
            if not ok.all():
                seen = list(dict.fromkeys(map(repr, a[~ok].tolist())))[:4]
                raise ValueError(
                    f"{name} must say whether each example is called positive (booleans, or 0 "
                    f"and 1); got values such as {', '.join(seen)}. For labels, compare them with the "
                    "positive class (labels == clf.classes_[1]), or pass "
                    "Evaluation.positive."
                )
        out.append(a.astype(bool))
    if out[0].shape != out[1].shape:
        raise ValueError(
            f"early_positive and full_positive must have one value per example each; got "
            f"{out[0].shape[0]} and {out[1].shape[0]}"
        )
    return out[0], out[1]


@dataclass(frozen=True)
class TradeoffCurve:
    """A tradeoff curve: one row per τ (attentive) or budget B (budgeted).

    Attributes
    ----------
    method : str
    parameter_name : {"tau", "budget"}
    parameter : ndarray
    mean_evaluated_fraction, stop_error, disagreement : ndarray
    n_terms : int
    """

    method: str
    parameter_name: str
    parameter: np.ndarray
    mean_evaluated_fraction: np.ndarray
    stop_error: np.ndarray
    disagreement: np.ndarray
    n_terms: int

    @property
    def mean_evaluated(self) -> np.ndarray:
        """Mean number of terms evaluated."""
        return self.mean_evaluated_fraction * self.n_terms

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            {
                "method": self.method,
                self.parameter_name: self.parameter,
                "mean_evaluated_fraction": self.mean_evaluated_fraction,
                "mean_evaluated": self.mean_evaluated,
                "stop_error": self.stop_error,
                "disagreement": self.disagreement,
            }
        )


def _running_records(run: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of each row's running extremum, sorted, with cumulative run lengths.

    A row's running minimum is a step function of ``t`` with few steps (records); it stays at a
    record's value until the next record. Counting positions with ``running min ≥ τ`` therefore
    needs only the records and how long each lasts, not all ``examples × n`` values.
    Returns ``sign × value`` ascending and ``cumlen`` with ``cumlen[k]`` = total length of the
    first ``k`` records.
    """
    m, width = run.shape
    changes = np.empty((m, width), dtype=bool)
    changes[:, 0] = True
    np.not_equal(run[:, 1:], run[:, :-1], out=changes[:, 1:])
    flat = np.flatnonzero(changes)  # 1-D nonzero is several times faster than 2-D
    rows, cols = np.divmod(flat, width)
    # A record lasts until the next record in its row, or to the end of the row.
    ends = np.empty_like(cols)
    ends[:-1] = cols[1:]
    ends[np.flatnonzero(np.diff(rows))] = width
    ends[-1:] = width
    values = sign * run.ravel()[flat]
    # Equal values are either all ≥ τ or all < τ, so their order is irrelevant: the unstable
    # sort is about twice as fast.
    order = np.argsort(values)
    cumlen = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum((ends - cols)[order], out=cumlen[1:])
    return values[order], cumlen


class AttentiveSweep:
    """Precomputed running extrema of walks, for constant-τ sweeps in ``O(log)`` per τ.

    Parameters
    ----------
    S : ndarray (n_examples, n_terms)
        Partial scores, column ``t-1`` = ``S_t``.
    theta_s : float
        Decision threshold in S space.
    side : {"lower", "upper"}
    """

    def __init__(self, S, theta_s: float, side: str = "lower"):
        if side not in ("lower", "upper"):
            raise ValueError(f"a constant sweep is one-sided: 'lower' or 'upper', got {side!r}")
        S = np.asarray(S)
        m, n = S.shape
        self.side = side
        self.theta_s = float(theta_s)
        self.n_examples = m
        self.n_terms = n
        full_positive = S[:, n - 1] >= theta_s
        # lower stops protect F (stop-error counts F that stopped); upper mirrors with ¬F.
        sign = 1.0 if side == "lower" else -1.0
        self._sign = sign
        self._protected = full_positive if side == "lower" else ~full_positive
        if n > 1:
            # Running extremum of S_t (t < n) toward the boundary's side; max for upper avoids
            # negating the whole matrix.
            head = S[:, : n - 1]
            run = (np.minimum if side == "lower" else np.maximum).accumulate(head, axis=1)
            self._final = sign * run[:, -1]
            self._records, self._record_cumlen = _running_records(run, sign)
        else:
            self._final = np.full(m, np.inf)
            self._records = np.empty(0)
            self._record_cumlen = np.zeros(1, dtype=np.int64)
        self._sorted_protected = np.sort(self._final[self._protected])
        self._sorted_final = np.sort(self._final)
        self.min_score = float(sign * self._sorted_final[0]) if n > 1 and m else self.theta_s

    def default_taus(self, n_taus: int = 200) -> np.ndarray:
        """``n_taus`` values from the extreme partial score up to ``θ_S`` (the paper's range)."""
        return np.linspace(self.min_score, self.theta_s, n_taus)

    def counts(self, taus):
        """For each τ: total terms evaluated, examples stopped, protected examples stopped."""
        t = self._sign * np.asarray(taus, dtype=np.float64)
        # #{(x, t < n): running extremum ≥ τ} = total length of the records whose value is ≥ τ.
        below = np.searchsorted(self._records, t, side="left")
        n_ge = self._record_cumlen[-1] - self._record_cumlen[below]
        total_evaluated = self.n_examples + n_ge
        stopped = np.searchsorted(self._sorted_final, t, side="left")
        stopped_protected = np.searchsorted(self._sorted_protected, t, side="left")
        return total_evaluated, stopped, stopped_protected

    def curve(self, taus=None, n_taus: int = 200) -> TradeoffCurve:
        taus = self.default_taus(n_taus) if taus is None else np.asarray(taus, dtype=np.float64)
        total, _stopped, bad = self.counts(taus)
        n_protected = self._sorted_protected.size
        with np.errstate(invalid="ignore", divide="ignore"):
            serr = bad / n_protected if n_protected else np.full(taus.shape, np.nan)
        return TradeoffCurve(
            method="attentive",
            parameter_name="tau",
            parameter=taus,
            mean_evaluated_fraction=total / (self.n_examples * self.n_terms),
            stop_error=np.asarray(serr, dtype=np.float64),
            disagreement=bad / self.n_examples,
            n_terms=self.n_terms,
        )


def attentive_tradeoff(S, theta_s: float, taus=None, side: str = "lower", n_taus: int = 200):
    """Stop-error and disagreement against mean evaluated fraction over constant τ (SPEC §4)."""
    return AttentiveSweep(S, theta_s, side).curve(taus, n_taus)


def budgeted_tradeoff(S, theta_s: float, budgets=None, side: str = "lower") -> TradeoffCurve:
    """The budgeted baseline over ``B`` (default ``1..n``): predict positive iff ``(n/B) S_B ≥ θ_S``."""
    check_side(side)
    S = np.asarray(S)
    m, n = S.shape
    budgets = np.arange(1, n + 1) if budgets is None else np.asarray(budgets, dtype=np.int64)
    full = S[:, n - 1] >= theta_s
    err = np.empty(budgets.shape)
    dis = np.empty(budgets.shape)
    # Process budgets in column blocks to bound the temporary boolean matrix.
    step = max(1, 2_000_000 // max(1, m))
    for start in range(0, budgets.size, step):
        B = budgets[start : start + step]
        pos = (n / B) * S[:, B - 1] >= theta_s
        dis[start : start + step] = np.mean(pos != full[:, None], axis=0)
        if side == "lower":
            bad = np.sum(~pos & full[:, None], axis=0)
            denom = full.sum()
        elif side == "upper":
            bad = np.sum(pos & ~full[:, None], axis=0)
            denom = (~full).sum()
        else:
            bad = np.sum(pos != full[:, None], axis=0)
            denom = m
        with np.errstate(invalid="ignore", divide="ignore"):
            err[start : start + step] = bad / denom if denom else np.nan
    return TradeoffCurve(
        method="budgeted",
        parameter_name="budget",
        parameter=budgets,
        mean_evaluated_fraction=budgets / n,
        stop_error=err,
        disagreement=dis,
        n_terms=n,
    )


@dataclass(frozen=True)
class PRCurve:
    """Precision–recall of one score against the true labels."""

    name: str
    precision: np.ndarray
    recall: np.ndarray
    thresholds: np.ndarray
    average_precision: float


def precision_recall(y_true, scores: dict, pos_label=1) -> dict[str, PRCurve]:
    """Precision–recall curves and average precision for each named score (SPEC §4).

    Typical ``scores``: ``{"full": f(x), "attentive": Algorithm 1 scores, "budgeted": c + (n/B) S_B}``.
    """
    from sklearn.metrics import average_precision_score, precision_recall_curve

    out = {}
    for name, s in scores.items():
        p, r, t = precision_recall_curve(y_true, s, pos_label=pos_label)
        ap = average_precision_score(y_true, s, pos_label=pos_label)
        out[name] = PRCurve(name, p, r, t, float(ap))
    return out
