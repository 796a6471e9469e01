"""Sketched walks (SPEC §3b): a cheap approximation of every term computed for the whole row, then
a walk over the residual terms. :mod:`attentive.sketch.nystrom` fits the sketch of an RBF SVM,
:mod:`attentive.sketch.walk` walks after it."""

from attentive.sketch.choice import (
    AXIS_SIZES,
    COUNT_SIZES,
    DEFAULT_SIZES,
    SketchChoice,
    SketchOption,
    cheapest_at,
    choose_sketch,
)
from attentive.sketch.nystrom import (
    LANDMARKS,
    NystromSketch,
    fit_sketch,
    principal_directions,
    sketch_available,
    sketch_cost,
    sketch_unavailable,
    walked_term_cost,
)
from attentive.sketch.walk import (
    SKETCH_ORDERS,
    SketchedWalk,
    make_sketched_walk,
    residual_order,
    sketch_walk,
)

__all__ = [
    "AXIS_SIZES",
    "COUNT_SIZES",
    "DEFAULT_SIZES",
    "LANDMARKS",
    "SKETCH_ORDERS",
    "NystromSketch",
    "SketchChoice",
    "SketchOption",
    "SketchedWalk",
    "cheapest_at",
    "choose_sketch",
    "fit_sketch",
    "make_sketched_walk",
    "principal_directions",
    "residual_order",
    "sketch_available",
    "sketch_cost",
    "sketch_unavailable",
    "sketch_walk",
    "walked_term_cost",
]
