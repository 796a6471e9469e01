"""The project's own exception types.

Every error a user can cause is one of these, so the app can show it as a notification and the CLI
can print it without a traceback. Each subclasses the built-in type a scikit-learn user would expect
(``ValueError`` for bad values, ``TypeError`` for unsupported objects).
"""

from __future__ import annotations

__all__ = [
    "AttentiveError",
    "DataError",
    "DownloadError",
    "FeatureMismatchError",
    "InvalidParameterError",
    "NonFiniteInput",
    "OutputError",
    "UnsupportedModelError",
    "UntrustedModelError",
]


class AttentiveError(Exception):
    """Base class of every error raised on purpose by ``attentive``."""


class InvalidParameterError(AttentiveError, ValueError):
    """A parameter (δ, θ, seed, boundary, side, ...) is outside its allowed range or set."""


class DataError(AttentiveError, ValueError):
    """A dataset or user file is missing, empty, truncated, malformed or not a binary problem."""


class DownloadError(DataError):
    """A download failed or produced a file whose checksum or shape is wrong."""


class UnsupportedModelError(AttentiveError, TypeError):
    """The model type (or its kernel, or its number of classes) is not supported."""


class UntrustedModelError(AttentiveError, TypeError):
    """A model file is a pickle/joblib file, or a skops file containing untrusted types."""


class NonFiniteInput(AttentiveError, ValueError):
    """Examples with a NaN or infinite value, found by the evaluator where it checks them itself
    (the estimator then raises scikit-learn's own error for the same input)."""


class FeatureMismatchError(AttentiveError, ValueError):
    """A model and a dataset disagree on the number of features."""


class OutputError(AttentiveError, ValueError):
    """An output cannot be written: its directory is missing or read-only, or the disk is full."""
