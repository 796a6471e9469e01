"""The one registry of rule names: every stopping rule ``AttentiveClassifier(boundary=...)``
accepts, what kind of rule each is, and one line on it. The estimator, the dashboard, the command
line and the tests take their lists from here; the rule families register themselves
(:mod:`attentive.families`), so a new family is a new rule everywhere."""

from __future__ import annotations

from dataclasses import dataclass

from attentive.families import family_class, family_names
from attentive.families.sketched import base_family, sketched_names

__all__ = ["RULE_KINDS", "Rule", "rule_names", "rules"]

#: What a rule is: a family with a scale z (SPEC §3), a family on a sketched walk (SPEC §3b),
#: Algorithm 2's budget, every term, or a family whose scale is chosen on held-out data.
RULE_KINDS = ("family", "sketched", "budget", "full", "calibrated")


@dataclass(frozen=True)
class Rule:
    """One stopping rule: its ``name`` (the ``boundary`` value), ``kind`` (:data:`RULE_KINDS`)
    and a one-line ``description``."""

    name: str
    kind: str
    description: str


def rules() -> tuple[Rule, ...]:
    """Every rule, the families first in their registration order."""
    return (
        *(Rule(name, "family", family_class(name).description) for name in family_names()),
        *(
            Rule(
                name,
                "sketched",
                f"{family_class(base_family(name)).description}, after a sketch of the score",
            )
            for name in sketched_names()
        ),
        Rule("budget", "budget", "evaluate exactly the first B terms (the paper's Algorithm 2)"),
        Rule("full", "full", "evaluate every term (the full model)"),
        Rule(
            "calibrated",
            "calibrated",
            "a family whose scale is chosen on held-out data: disagreement ≤ δ w.p. ≥ 1 − α",
        ),
    )


def rule_names(*kinds: str) -> tuple[str, ...]:
    """The names of the rules of ``kinds`` (every rule when none is given), in :func:`rules`'
    order."""
    unknown = set(kinds) - set(RULE_KINDS)
    if unknown:
        raise ValueError(f"rule kinds are {RULE_KINDS}; got {sorted(unknown)}")
    return tuple(r.name for r in rules() if not kinds or r.kind in kinds)
