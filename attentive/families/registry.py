"""The table of rule families: name → class. One place that the estimator, calibration, the
dashboard and the experiments read."""

from __future__ import annotations

from attentive.errors import InvalidParameterError

_FAMILIES: dict = {}


def register_family(cls):
    """Class decorator: make a :class:`~attentive.families.base.BoundaryFamily` available by name."""
    if cls.name in _FAMILIES:
        raise ValueError(f"a rule family named {cls.name!r} is registered already.")
    _FAMILIES[cls.name] = cls
    return cls


def family_names() -> tuple[str, ...]:
    """Registered family names, in registration order."""
    return tuple(_FAMILIES)


def family_class(name: str):
    """The family class registered as ``name``."""
    try:
        return _FAMILIES[name]
    except (KeyError, TypeError):
        raise InvalidParameterError(
            f"family must be one of {family_names()} (or 'auto' where a choice is made), "
            f"got {name!r}."
        ) from None
