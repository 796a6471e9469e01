"""The one registry of rule names: every list of rules derives from it."""

from __future__ import annotations

import pytest

from attentive import AttentiveClassifier, family_names
from attentive.errors import InvalidParameterError
from attentive.estimator import boundaries
from attentive.families import register_family
from attentive.families.curved import CurvedFamily
from attentive.families.registry import _FAMILIES
from attentive.rules import RULE_KINDS, rule_names, rules


def test_every_rule_once_with_its_kind():
    names = rule_names()
    assert len(names) == len(set(names))
    assert set(rule_names("family")) == set(family_names())
    assert rule_names("budget") == ("budget",) and rule_names("full") == ("full",)
    assert rule_names("calibrated") == ("calibrated",)
    assert {r.kind for r in rules()} == set(RULE_KINDS)
    assert all(r.description for r in rules())
    with pytest.raises(ValueError, match="rule kinds"):
        rule_names("families")


def test_the_estimator_and_the_dashboard_read_the_registry():
    from attentive.app.rules import kinds

    assert boundaries() == rule_names()
    # The dashboard lists every family, their sketched rules (SPEC §3b), the budget and calibrated.
    assert kinds() == list(rule_names("family", "sketched", "budget", "calibrated"))
    with pytest.raises(InvalidParameterError, match="boundary must be one of"):
        AttentiveClassifier(None, boundary="no-such-rule")._check_params()


def test_a_registered_family_is_a_rule_everywhere():
    @register_family
    class Twin(CurvedFamily):
        name = "curved-twin"
        description = "the curved family under another name (a test)"

    try:
        assert "curved-twin" in rule_names("family") and "curved-twin" in boundaries()
        AttentiveClassifier(None, boundary="curved-twin")._check_params()
    finally:
        _FAMILIES.pop("curved-twin")
    assert "curved-twin" not in rule_names()
