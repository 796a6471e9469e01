"""The interface every calibratable rule family implements (SPEC §3).

A family is a one-parameter set of boundaries indexed by a scale ``z`` (larger: more
conservative). Each family reduces each side to "stop at the first ``t < n`` whose *crossing
score* exceeds a threshold that depends on z only", so that one running maximum per example
answers every scale of a calibration grid at once (:func:`attentive.grid.grid_outcomes`).

To add a family: subclass :class:`BoundaryFamily` in a module of this package, implement
:meth:`~BoundaryFamily.boundary` and :meth:`~BoundaryFamily.crossing_scores`, and decorate the
class with :func:`attentive.families.register_family`. The estimator, calibration (``family=``
and ``"auto"``), the dashboard and the experiments then offer it by its ``name``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import ndtr

from attentive.boundaries import Boundary, ReferenceStats, frozen_array
from attentive.errors import InvalidParameterError
from attentive.validation import check_side


@dataclass(frozen=True)
class WalkStatistics:
    """What the families are built from: statistics of the walk over the reference set.

    Attributes
    ----------
    positive, negative : ReferenceStats
        Statistics over the reference examples of each class: a family's lower side uses the
        positives (the walks it must not stop wrongly), its upper side the negatives (SPEC §2).
    pooled : ReferenceStats
        Over every reference example.
    variance : float
        The bridge variance V of the constant boundary's lower side (over R: the positives, or
        every reference example when R is every one).
    spread : SpreadTable or None
        The residual spread of the regression's estimate by estimate (the heteroscedastic
        family's table, :func:`attentive.families.heteroscedastic.spread_table`); without it that
        family is the regression family.
    mass : MassTable or None
        The least-squares lines of ``S_n`` on ``S_t`` and the running mass ``A_t``
        (:func:`attentive.families.mass.mass_table`); without it the mass-regression family is
        the regression family.
    upper_variance : float or None
        The bridge variance V of the constant boundary's upper side, over the negatives (SPEC
        §2, per-side statistics); None (statistics saved before it was kept): ``variance``.
    starts_at_zero : bool
        Whether every walk starts at ``S_0 = 0`` (a plain walk), not at a score of its own (a
        sketched walk starts at the sketch's ``F̃(x)``, SPEC §3b). Families that assume
        ``S_0 = 0`` (:attr:`BoundaryFamily.needs_zero_start`) refuse statistics without it.
    """

    positive: ReferenceStats
    negative: ReferenceStats
    pooled: ReferenceStats
    variance: float
    spread: object | None = None
    mass: object | None = None
    starts_at_zero: bool = True
    upper_variance: float | None = None

    def side_variance(self, upper: bool) -> float:
        """The constant boundary's V for one side (SPEC §2: per-side statistics)."""
        up = getattr(self, "upper_variance", None)  # (None in statistics saved before it)
        return float(self.variance if not upper or up is None else up)

    @property
    def n_terms(self) -> int:
        return int(np.asarray(self.pooled.remainder_mean).shape[0])


class BoundaryFamily(ABC):
    """A one-parameter family of boundaries for one side choice and threshold θ_S."""

    name: ClassVar[str]
    #: One line for documentation and the dashboard.
    description: ClassVar[str] = ""
    #: Whether the family's boundaries assume walks that start at ``S_0 = 0`` (so not a sketched
    #: walk's, which starts at the sketch's score: docs/method.md, "Sketched walks").
    needs_zero_start: ClassVar[bool] = False

    def __init__(self, stats: WalkStatistics, theta_s: float, side: str = "both"):
        if self.needs_zero_start and not getattr(stats, "starts_at_zero", True):
            raise InvalidParameterError(
                f"the {self.name} family assumes walks that start at S_0 = 0; these walks start "
                "at a sketch's score (a sketched walk). Use a family that carries over to the "
                "residual walk: curved, regression, heteroscedastic or mass-regression."
            )
        self.stats = stats
        self.theta_s = float(theta_s)
        self.side = check_side(side)

    @property
    def kind(self) -> str:
        return self.name

    @property
    def n_terms(self) -> int:
        return self.stats.n_terms

    @property
    def uses_mass(self) -> bool:
        """Whether :meth:`crossing_scores` needs the running masses ``A_t`` (``mass=``) besides
        the partial scores, and the boundaries stop on ``S_t + κ_t A_t``."""
        return False

    @staticmethod
    def nominal_delta(z) -> np.ndarray:
        """``δ' = Φ(−z)``: the δ whose normal quantile is z (labels a scale for people)."""
        return ndtr(-np.asarray(z, dtype=np.float64))

    @abstractmethod
    def boundary(self, z: float) -> Boundary:
        """The member of the family at scale ``z``."""

    @abstractmethod
    def crossing_scores(self, head: np.ndarray, upper: bool) -> np.ndarray:
        """Per example and position ``t < n`` (``head`` = ``S_1 .. S_{n−1}``): the score whose
        exceeding :meth:`thresholds` stops the walk on that side (``−inf``: never). A family
        that :attr:`uses_mass` takes ``mass=`` (``A_1 .. A_{n−1}``) too."""

    def _sided_boundary(self, z: float, lower, upper, slope, intercept) -> Boundary:
        """The :class:`Boundary` of thresholds ``lower`` / ``upper`` on ``S_t``, with the side
        this family does not use switched off, and the estimate ``intercept + slope · S_t``."""
        if self.side == "upper":
            lower = np.full_like(lower, -np.inf)
        if self.side == "lower":
            upper = np.full_like(upper, np.inf)
        return Boundary(
            kind=self.name,
            side=self.side,
            lower=frozen_array(lower),
            upper=frozen_array(upper),
            estimate_slope=frozen_array(slope),
            estimate_intercept=frozen_array(intercept),
            params={"z": float(z), "theta_s": self.theta_s},
        )

    def thresholds(self, grid: np.ndarray, upper: bool) -> np.ndarray:
        """The crossing-score threshold of each scale (default: the scale itself)."""
        return np.asarray(grid, dtype=np.float64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(side={self.side!r}, theta_s={self.theta_s:g})"


def standardised(num: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """``num / spread`` with the conventions of a crossing score: a zero spread stops iff the
    numerator is positive, ``0 / 0`` never stops."""
    with np.errstate(divide="ignore", invalid="ignore"):
        score = num / spread
    return np.where(np.isnan(score), -np.inf, score)
