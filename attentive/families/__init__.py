"""Rule families: one-parameter sets of stopping boundaries that calibration chooses a scale for.

Each family lives in its own module and registers itself; :func:`make_family` builds one by name.
"""

# Importing the modules registers the families (in this order: the dashboard lists them so).
from attentive.families import (  # noqa: F401
    constant,
    curved,
    finite_population,
    heteroscedastic,  # imports (so registers) regression before itself
    mass,
    regression,
)
from attentive.families.base import BoundaryFamily, WalkStatistics
from attentive.families.registry import family_class, family_names, register_family
from attentive.families.regression import (
    RegressionStats,
    regression_boundary,
    regression_statistics,
)
from attentive.families.statistics import walk_statistics

__all__ = [
    "BoundaryFamily",
    "RegressionStats",
    "WalkStatistics",
    "applicable_families",
    "family_class",
    "family_names",
    "make_family",
    "register_family",
    "regression_boundary",
    "regression_statistics",
    "walk_statistics",
]


def make_family(name: str, stats: WalkStatistics, theta_s: float, side: str = "both"):
    """The family registered as ``name``, built from the walk's reference statistics."""
    return family_class(name)(stats, theta_s, side)


def applicable_families(stats: WalkStatistics) -> tuple[str, ...]:
    """The registered family names that can be built from ``stats``: all of them for a plain
    walk; for a sketched walk (``stats.starts_at_zero`` false) those that do not assume
    ``S_0 = 0`` (:attr:`BoundaryFamily.needs_zero_start`)."""
    return tuple(
        name
        for name in family_names()
        if stats.starts_at_zero or not family_class(name).needs_zero_start
    )
