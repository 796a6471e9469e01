"""The term sources and their routing: one class per kind of term, tried in registration order;
the first that says it is :meth:`~attentive.evaluator.sources.base.TermSource.usable` serves the
call (the shape of scikit-learn's pairwise-distance dispatcher: the caller never knows the
specialisations)."""

from __future__ import annotations

from attentive.evaluator.sources.base import NotUsable, TermSource

__all__ = [
    "NotUsable",
    "TermSource",
    "build_source",
    "register_source",
    "source_for",
    "sources",
]

_SOURCES: list[type[TermSource]] = []

# Routing order, lowest first: specialised sources before the general ones they refine.
SPARSE, GRID, SINGLE, DOUBLE, WEAK, GENERIC = 10, 20, 30, 40, 80, 90


def register_source(cls: type[TermSource] | None = None, *, priority: int = DOUBLE):
    """Class decorator: route calls to the source where it is usable and no source of a lower
    ``priority`` (or of the same, registered before it) is. ``@register_source`` or
    ``@register_source(priority=GRID)``."""

    def register(cls):
        if any(s.kind == cls.kind for s in _SOURCES):
            raise ValueError(f"a term source named {cls.kind!r} is registered already.")
        cls.priority = priority
        _SOURCES.append(cls)
        _SOURCES.sort(key=lambda s: s.priority)  # stable: registration order within a priority
        return cls

    return register if cls is None else register(cls)


def sources() -> tuple[type[TermSource], ...]:
    """Every registered source, in routing order."""
    return tuple(_SOURCES)


def source_for(
    walk, plan, X, precision: str, *, after: type[TermSource] | None = None, full: bool = False
):
    """The first registered source usable for ``walk`` on prepared rows ``X`` at ``precision``
    (``"single"`` or ``"double"``); with ``after``, the first after that one; ``full``: for a
    full evaluation (skipping sources that leave it to a later one, ``serves_full``)."""
    candidates = _SOURCES if after is None else _SOURCES[_SOURCES.index(after) + 1 :]
    for cls in candidates:
        # (serves_full first: a dtype test, where usable may look at a row)
        if (not full or cls.serves_full(X)) and cls.usable(walk, plan, X, precision):
            return cls
    raise LookupError(f"no term source serves {walk.terms.kind} terms on {type(X).__name__} rows")


def build_source(
    walk, plan, X, precision: str, cls: type[TermSource] | None = None, *, ahead_positions: int = 0
):
    """An instance holding rows ``X``: of ``cls`` (default: the routed source), or, where its
    constructor finds the rows do not suit it (:class:`NotUsable`) or it would carry an error
    band under ``precision="double"``, of the next usable one. ``ahead_positions``: the leading
    positions of the walk (its first blocks), for a source that computes them as it reads the
    rows in (:attr:`TermSource.reads_ahead`)."""
    cls = cls or source_for(walk, plan, X, precision)
    while True:
        try:
            if ahead_positions and cls.reads_ahead:
                source = cls(walk, plan, X, ahead_positions=ahead_positions)
            else:
                source = cls(walk, plan, X)
        except NotUsable:
            cls = source_for(walk, plan, X, precision, after=cls)
            continue
        if precision == "double" and source.certified:
            # Double precision asked for: a source whose terms carry a band (rows near the grid
            # but not on it) is not that.
            cls = source_for(walk, plan, X, precision, after=cls)
            continue
        # A certified source may hold rows without a useful band (an infinite bound): full
        # evaluation recomputes them in double precision (TermSource.tile_totals), and a walk
        # sets them aside for double precision before its first block (walk.walk_rows), the
        # rest of the chunk keeping the certified source.
        return source


# Registration order is routing order: specialised sources first, the generic one last.
from attentive.evaluator.sources import (  # noqa: E402, F401
    dot,
    generic,
    grid,
    linear,
    rbf,
    rbf_single,
    sparse_kernel,
    sparse_linear,
)
