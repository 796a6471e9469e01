"""Process-wide caches shared read-only by every dashboard session.

The expensive steps (loading a dataset, training a model, the test set's partial-score matrix ``S``,
the running extrema behind a τ sweep) depend only on content, so they are computed once and shared
across slider moves *and* sessions. Everything stored here is immutable: dataclasses are frozen and
numpy arrays are marked ``writeable=False``, so one session cannot change what another sees.

Keys are content, never session objects: a dataset is keyed by its name and parameters (or the hash
of an uploaded file), a model by the dataset's fingerprint and the training parameters (or the hash
of an uploaded model), a walk by those plus centering and permutation seed, a sweep by the walk plus
side and θ. Nothing here imports Panel.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from attentive.boundaries import ReferenceStats, constant_threshold
from attentive.estimator import AttentiveClassifier
from attentive.metrics import AttentiveSweep, TradeoffCurve, budgeted_tradeoff, precision_recall
from attentive.simulation import BridgeSimulation, simulate_decision_error
from attentive.walk import Walk

__all__ = [
    "ModelBundle",
    "SweepBundle",
    "WalkBundle",
    "cached",
    "calibration_split",
    "calibration_walk_bundle",
    "clear_caches",
    "content_hash",
    "frozen",
    "model_bundle",
    "simulation",
    "sweep_bundle",
    "walk_bundle",
]

T = TypeVar("T")

# Budgets drawn on the budgeted tradeoff curve (B = 1..n subsampled to at most this many values).
N_BUDGETS = 200
# Test examples whose walks the trajectory view can draw (a fixed, seed-independent sample).
MAX_TRAJECTORIES = 500
# The Brownian-bridge simulation behind the theory check: modest, so it runs in well under a second.
SIMULATION_N = 200
SIMULATION_PATHS = 20_000
# The part of the training split held out for the calibrated boundary: the estimator's default.
CALIBRATION_SIZE = 0.3


class _LRU:
    """A small thread-safe least-recently-used cache (values are computed outside the lock)."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = compute()
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


_CACHES: dict[str, _LRU] = {
    "dataset": _LRU(8),
    "model": _LRU(8),
    "walk": _LRU(6),
    "sweep": _LRU(24),
    "curve": _LRU(24),
    "simulation": _LRU(2),
}


def cached(kind: str, key: Hashable, compute: Callable[[], T]) -> T:
    """Return the cached value for ``key`` in cache ``kind``, computing it on a miss."""
    return _CACHES[kind].get(key, compute)


def clear_caches() -> None:
    """Empty every cache (tests and benchmarks use it to measure cold starts)."""
    for c in _CACHES.values():
        c.clear()


def content_hash(data: bytes) -> str:
    """A short digest of uploaded bytes, used as a cache key."""
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def frozen(a, dtype=None) -> np.ndarray:
    """``a`` as a read-only contiguous array (no copy when it already is one)."""
    out = np.ascontiguousarray(a, dtype=dtype)
    if out.flags.writeable:
        if out is a or (isinstance(a, np.ndarray) and np.shares_memory(out, a)):
            out = out.copy()
        out.flags.writeable = False
    return out


# ----------------------------------------------------------------------------- model level


@dataclass(frozen=True)
class ModelBundle:
    """A dataset and a fitted model, with the model's identity.

    Attributes
    ----------
    key : tuple
        Cache key of this pair (dataset identity, model identity).
    dataset : attentive.data.Dataset
    model : estimator
    fingerprint : str
        :func:`attentive.models.model_fingerprint` of the model.
    description : str
        One line saying what the model is.
    """

    key: tuple
    dataset: Any
    model: Any
    fingerprint: str
    description: str


def model_bundle(dataset_key: tuple, dataset, model_key: tuple, make_model: Callable[[], Any]):
    """The (dataset, model) pair for these keys, training or loading the model on a miss."""
    from attentive.models import model_fingerprint

    def compute() -> ModelBundle:
        model = make_model()
        return ModelBundle(
            key=(dataset_key, model_key),
            dataset=dataset,
            model=model,
            fingerprint=model_fingerprint(model),
            description=_describe_model(model),
        )

    return cached("model", (dataset_key, model_key), compute)


def _describe_model(model) -> str:
    from attentive.models import final_estimator

    last = final_estimator(model)
    name = type(last).__name__
    kernel = getattr(last, "kernel", None)
    if kernel is not None:
        return f"{name}(kernel={kernel!r}, C={last.C:g})"
    c = getattr(last, "C", None)
    return f"{name}(C={c:g})" if c is not None else name


# ----------------------------------------------------------------------------- walk level


@dataclass(frozen=True)
class WalkBundle:
    """Everything about one (dataset, model, centering, seed) that no slider changes.

    Attributes
    ----------
    key : tuple
    models : ModelBundle
        The dataset and model it was built from.
    estimator : AttentiveClassifier
        Fitted with ``boundary="full"`` on the training part (the reference set; for the
        calibrated boundary's walk, the training part without the calibration examples): its walk, its
        reference and per-class statistics are exactly what an exported classifier uses.
    walk : Walk
    S : ndarray (n_test, n_terms), read-only
        Test partial scores, column ``t-1`` = ``S_t``.
    full_score : ndarray (n_test,)
        ``f(x) = c + S_n(x)``.
    y_test : ndarray (n_test,)
        True labels in {0, 1}.
    sample : ndarray of int
        The test examples the trajectory view may draw (a fixed sample, independent of the seed).
    variance : float
        The bridge variance V (``variance="terms"``) of the reference set.
    stats : dict
        ``{"positive", "negative", "reference"}`` → :class:`ReferenceStats`.
    full_pr : PRCurve
        Precision–recall of the full score.
    calibration_S : ndarray (m, n_terms) or None, read-only
        For the calibrated boundary's walk only: partial scores of the calibration examples held
        out of the training part (:func:`calibration_walk_bundle`).
    n_fit : int
        Training examples the model (if trained here), μ and the reference statistics came from.
    """

    key: tuple
    models: ModelBundle
    estimator: AttentiveClassifier
    walk: Walk
    S: np.ndarray
    full_score: np.ndarray
    y_test: np.ndarray
    sample: np.ndarray
    variance: float
    stats: dict[str, ReferenceStats]
    full_pr: Any
    calibration_S: np.ndarray | None = None
    n_fit: int = 0

    @property
    def n_terms(self) -> int:
        return int(self.S.shape[1])

    @property
    def offset(self) -> float:
        return self.walk.offset


def walk_bundle(models: ModelBundle, centering: str, seed: int) -> WalkBundle:
    """Fix centering and order on the training part and compute the test partial scores once."""
    key = (models.key, centering, int(seed))
    ds = models.dataset
    return cached(
        "walk",
        key,
        lambda: _build_walk(key, models, models.model, ds.X_train, ds.y_train, centering, seed),
    )


def calibration_split(X, y, seed: int):
    """``(X_fit, X_cal, y_fit, y_cal)``: the stratified calibration hold-out of a training part.

    The very split ``AttentiveClassifier(boundary="calibrated", random_state=seed,
    calibration_size=CALIBRATION_SIZE).fit(X, y)`` makes, so that an exported classifier holds out
    the same examples.
    """
    from attentive.errors import InvalidParameterError

    try:
        return train_test_split(
            X, y, test_size=CALIBRATION_SIZE, stratify=y, random_state=int(seed)
        )
    except ValueError as exc:
        raise InvalidParameterError(
            f"cannot hold out {CALIBRATION_SIZE:.0%} of the {len(y)} training examples for "
            f"calibration with both classes on each side: {exc}"
        ) from None


def calibration_walk_bundle(models: ModelBundle, centering: str, seed: int) -> WalkBundle:
    """The walk for the calibrated boundary: everything refit without the calibration examples.

    The guarantee of SPEC §3 needs calibration examples independent of the model, μ and the
    reference statistics, so a stratified :data:`CALIBRATION_SIZE` of the training part is held out
    (seeded by ``seed``), a trained model is trained again on the rest (an uploaded model is used as
    it is), and the held-out part's partial scores are kept in ``calibration_S``.
    """
    key = (models.key, centering, int(seed), "calibration", CALIBRATION_SIZE)

    def compute() -> WalkBundle:
        ds = models.dataset
        X_fit, X_cal, y_fit, _ = calibration_split(ds.X_train, ds.y_train, seed)
        # An uploaded model was fitted elsewhere (the guarantee assumes it never saw these
        # examples); a model trained here is trained again without them.
        uploaded = models.key[1][0] == "file"
        model = models.model if uploaded else clone(models.model).fit(X_fit, y_fit)
        bundle = _build_walk(key, models, model, X_fit, y_fit, centering, seed)
        S_cal = frozen(bundle.walk.partial_scores(X_cal), dtype=np.float64)
        return dataclasses.replace(bundle, calibration_S=S_cal)

    return cached("walk", key, compute)


def _build_walk(key, models: ModelBundle, model, X_fit, y_fit, centering, seed) -> WalkBundle:
    ds = models.dataset
    est = AttentiveClassifier(
        FrozenEstimator(model), boundary="full", centering=centering, random_state=int(seed)
    ).fit(X_fit, y_fit)
    S = frozen(est.walk_.partial_scores(ds.X_test), dtype=np.float64)
    full_score = frozen(est.offset_ + S[:, -1])
    y_test = frozen(ds.y_test)
    # A fixed random order of the test examples (seed-independent, so moving the permutation
    # seed changes the walks, not which examples are drawn); any prefix is a uniform sample.
    sample = frozen(np.random.default_rng(0).permutation(S.shape[0])[:MAX_TRAJECTORIES])
    full_pr = precision_recall(y_test, {"full": full_score})["full"]
    return WalkBundle(
        key=key,
        models=models,
        estimator=est,
        walk=est.walk_,
        S=S,
        full_score=full_score,
        y_test=y_test,
        sample=sample,
        variance=est.reference_stats_.variance("terms"),
        stats={
            "positive": est.class_stats_["positive"],
            "negative": est.class_stats_["negative"],
            "reference": est.reference_stats_,
        },
        full_pr=full_pr,
        n_fit=len(y_fit),
    )


# ----------------------------------------------------------------------------- sweep level


@dataclass(frozen=True)
class SweepBundle:
    """What depends on (walk, side, θ) but not on δ.

    Attributes
    ----------
    theta_s : float
        ``θ_S = θ − c``.
    full_positive : ndarray of bool
        ``S_n ≥ θ_S``, the full decisions.
    sweep : AttentiveSweep or None
        For one-sided rules: the constant-τ sweep (None for ``side="both"``).
    attentive : TradeoffCurve or None
        The paper's curve: all τ from the extreme partial score to θ_S.
    budgeted : TradeoffCurve
        B = 1..n (subsampled).
    """

    theta_s: float
    full_positive: np.ndarray
    sweep: AttentiveSweep | None
    attentive: TradeoffCurve | None
    budgeted: TradeoffCurve


def sweep_bundle(walks: WalkBundle, side: str, theta: float) -> SweepBundle:
    """The τ sweep and the budgeted curve for this side and θ (computed once, shared)."""
    key = (walks.key, side, float(theta))

    def compute() -> SweepBundle:
        theta_s = walks.walk.theta_s(theta)
        S = walks.S
        n = S.shape[1]
        sweep = AttentiveSweep(S, theta_s, side) if side in ("lower", "upper") else None
        budgets = np.unique(np.linspace(1, n, min(n, N_BUDGETS)).round().astype(np.int64))
        return SweepBundle(
            theta_s=theta_s,
            full_positive=frozen(S[:, -1] >= theta_s),
            sweep=sweep,
            attentive=sweep.curve() if sweep is not None else None,
            budgeted=budgeted_tradeoff(S, theta_s, budgets, side),
        )

    return cached("sweep", key, compute)


# ----------------------------------------------------------------------------- simulation


def simulation(deltas: tuple[float, ...]) -> BridgeSimulation:
    """The Brownian-bridge simulation of SPEC §5 on a modest grid (independent of the dataset)."""
    return cached(
        "simulation",
        deltas,
        lambda: simulate_decision_error(
            SIMULATION_N, np.asarray(deltas), n_paths=SIMULATION_PATHS, random_state=0
        ),
    )


def constant_taus(deltas, variance: float, theta_s: float, side: str) -> np.ndarray:
    """The constant thresholds τ(δ) for a grid of δ (one-sided)."""
    return np.array([constant_threshold(d, variance, theta_s, side) for d in deltas])
