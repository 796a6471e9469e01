"""What a user types or a URL says, turned into a control's value, and errors in the dashboard's
words.

A text field or a URL gives text (``"0.05"``, ``"7"``); :func:`typed` turns it into the type the
control's parameter holds and leaves range and choices to param's own validation, whose message
:func:`plain` rewords (``Number parameter 'DashboardState.C' must be at least 0`` becomes
``C: must be at least 0``). :func:`user_message` rewords the library's errors where the dashboard
names things otherwise. No Panel here.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re

import param

from attentive.data.reader import CHOOSE_BASE, EXCLUDE, SEPARATOR_ADVICE
from attentive.data.userfile import LABEL_COLUMN_GUESSES
from attentive.errors import DataError, DownloadError, InvalidParameterError, UntrustedModelError

__all__ = ["parse_gamma", "plain", "typed", "user_message"]

POSITIVE_CLASS_LABEL = "Positive class (uploads)"


def parse_gamma(gamma: str) -> str | float:
    """``gamma`` as the model takes it: ``"scale"``, ``"auto"`` or a positive number."""
    text = str(gamma).strip()
    if text in ("scale", "auto"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise InvalidParameterError(
            f"gamma must be 'scale', 'auto' or a positive number, got {gamma!r}."
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise InvalidParameterError(f"gamma must be a positive number, got {gamma!r}.")
    return value


# Fields of a rate, which take "1%" for 0.01 as their placeholders write it ("e.g. 0.01 (1 %)").
PERCENT_FIELDS = ("target", "delta", "alpha")


def _percent(text: str):
    """``"1 %"`` as 0.01; text that is not a number before its % is left as it is (refused)."""
    try:
        return float(text.strip()[:-1]) / 100
    except ValueError:
        return text


def typed(p: param.Parameter, value):
    """``value`` (text from a field or a URL, or already typed) as ``p`` holds it; a word where a
    number belongs raises ValueError. Bounds and choices are param's to check."""
    if isinstance(value, str) and value.strip() in ("", "None") and p.allow_None:
        return None
    if isinstance(p, param.Integer):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            with contextlib.suppress(ValueError):  # (beyond Python's 4,300 digits: a float, inf)
                return int(value)  # as typed (through float, 30 digits came back as other digits)
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected a whole number, got {value!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise ValueError(f"expected a whole number, got {value!r}")
        return int(f)
    if isinstance(p, param.Number):
        if isinstance(value, str) and value.strip().endswith("%") and p.name in PERCENT_FIELDS:
            value = _percent(value)
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected a number, got {value!r}") from None
        if not math.isfinite(f):
            raise ValueError(f"expected a finite number, got {value!r}")
        return f
    if isinstance(p, param.String) and isinstance(value, numbers.Real):
        return f"{value:.12g}"  # a URL's gamma=0.1 arrives as a number
    if isinstance(p, param.Selector) and isinstance(value, numbers.Real):
        text = f"{value:.12g}"
        return text if text in p.objects else value
    return value


def plain(exc: BaseException) -> str:
    """A control's error without param's own wording (``Number parameter 'X.y' must ...``)."""
    return re.sub(r"^\w+ parameter '[^']*' ", "", str(exc))


# What to do with an uploaded LIBSVM file whose index base the shared reader cannot tell.
UPLOAD_BASE_HINT = (
    "The dashboard cannot be told which: upload the rows as CSV with a header instead, or score "
    "the file with python -m attentive score --zero-based or --one-based."
)


# The page reads commas (tabs in a .tsv file) and takes a LIBSVM file by its name.
UPLOAD_SEPARATOR_HINT = (
    "(the page splits a .csv file at commas and a .tsv file at tabs; a LIBSVM file is read as "
    "LIBSVM when named .libsvm, .svm or .txt)"
)
# Columns that are not features: the dashboard takes the labels' column only.
UPLOAD_EXCLUDE_HINT = "remove the columns that are not features (or the label) from the file"

LABEL_HINT = (
    "the labels' column is found by its name: name exactly one column "
    + ", ".join(repr(c) for c in LABEL_COLUMN_GUESSES[:-1])
    + f" or {LABEL_COLUMN_GUESSES[-1]!r}"
)


def user_message(exc: BaseException) -> str:
    """The library's message, worded for the dashboard where the dashboard names things otherwise.

    The library's own message stays as it is (it speaks of ``positive_class=...`` and lists every
    trusted type, which suits a script); the dashboard names its field instead, and shows only the
    refused types so that the notification stays short.
    """
    msg = str(exc)
    if isinstance(exc, DataError):
        msg = msg.replace("(positive_class=...)", f"in the '{POSITIVE_CLASS_LABEL}' field")
        # An upload's label column is found by its name; the dashboard has no label_column.
        msg = msg.replace("say which column holds the labels (label_column=...)", LABEL_HINT)
        # The shared reader names the command line's options; the dashboard has none.
        msg = msg.replace(f"Say which: {CHOOSE_BASE}", UPLOAD_BASE_HINT)
        msg = msg.replace(f"Remove it, or name the other columns with {EXCLUDE}", "Remove it")
        msg = msg.replace(f"name the other columns with {EXCLUDE}", UPLOAD_EXCLUDE_HINT)
        msg = msg.replace(f"name them with {EXCLUDE}", UPLOAD_EXCLUDE_HINT)
        msg = msg.replace(SEPARATOR_ADVICE, UPLOAD_SEPARATOR_HINT)
        msg = msg.replace("say so (--format csv, format='csv')", "name it .csv")
        msg = re.sub(
            r"say so and name the separator \(--format csv --sep '.', format='csv', sep='.'\)",
            "save it with commas (named .csv) or tabs (named .tsv)",
            msg,
        )
        msg = msg.replace("say so (--format libsvm, format='libsvm')", "name it .libsvm")
        msg = msg.replace(
            "Exclude it with --exclude 'Unnamed: 0' (exclude=... from Python), or write", "Write"
        )
        msg = re.sub(
            r", or pass --format \w+ \(format='\w+'\)( or --format \w+ \(format='\w+'\))*", "", msg
        )
    # A calibrated rule on an upload too small to hold out calibration rows: in the page's words.
    msg = msg.replace(
        "boundary='calibrated' holds out part of the fit examples to calibrate",
        "the calibrated rule holds out part of the training examples to calibrate",
    )
    if isinstance(exc, DownloadError):
        # The library lists every address it tried with its network error; a notification keeps
        # what the user can act on: what failed and how to install the file by hand.
        lines = [line for line in msg.splitlines() if line.strip()]
        if len(lines) > 2:
            head = lines[0].rstrip(":").removesuffix("; tried").rstrip(";")
            tried = " ".join(lines[1:-1]).lower()
            corrupt = "md5" in tried or "checksum" in tried or "corrupt" in tried
            why = "a mirror sent a damaged file" if corrupt else "this dataset needs internet"
            msg = f"{head} ({why}). {lines[-1]}"
    if isinstance(exc, UntrustedModelError):
        head, sep, _ = msg.partition(". Trusted beyond")
        if sep:
            msg = f"{head}. See docs/robustness.md for the types attentive trusts."
    return msg
