"""Sketched rules: a family applied to a sketched walk's residual statistic (SPEC §3b).

``sketched-<family>`` is the family ``<family>`` built from the statistics of the sketched walk
(:class:`attentive.sketch.SketchedWalk`), whose partial scores start at the sketch's score. Only
families that do not assume ``S_0 = 0`` carry over (:attr:`BoundaryFamily.needs_zero_start`:
the constant and finite-population families do not). Their boundaries say they belong to the
sketched walk (``params["walk"] = "sketched"``), which is how the estimator knows which walk to
evaluate them on.
"""

from __future__ import annotations

import dataclasses

from attentive.boundaries import Boundary
from attentive.families.base import BoundaryFamily
from attentive.families.registry import family_class, family_names

__all__ = ["SKETCHED_PREFIX", "SketchedFamily", "base_family", "is_sketched_name", "sketched_names"]

SKETCHED_PREFIX = "sketched-"


def sketched_names() -> tuple[str, ...]:
    """The sketched rule of every registered family that carries over to a sketched walk."""
    return tuple(
        SKETCHED_PREFIX + name for name in family_names() if not family_class(name).needs_zero_start
    )


def is_sketched_name(name) -> bool:
    return isinstance(name, str) and name in sketched_names()


def base_family(name: str) -> str:
    """``"sketched-curved"`` → ``"curved"``."""
    return name[len(SKETCHED_PREFIX) :]


class SketchedFamily(BoundaryFamily):
    """``inner`` (a family built from a sketched walk's statistics) under its sketched name."""

    def __init__(self, inner: BoundaryFamily):
        super().__init__(inner.stats, inner.theta_s, inner.side)
        self.inner = inner
        self.name = SKETCHED_PREFIX + inner.name
        self.description = f"{inner.description}, on the walk that starts at the sketch's score"

    @property
    def uses_mass(self) -> bool:
        return self.inner.uses_mass

    def boundary(self, z: float) -> Boundary:
        b = self.inner.boundary(z)
        return dataclasses.replace(
            b, kind=self.name, params={**(b.params or {}), "walk": "sketched"}
        )

    def crossing_scores(self, head, upper, **kwargs):
        return self.inner.crossing_scores(head, upper, **kwargs)

    def thresholds(self, grid, upper):
        return self.inner.thresholds(grid, upper)
