"""Save and load models safely with ``skops.io``; check a model is one the core can decompose.

Loading never unpickles: a pickle or joblib file is recognised by its first bytes (a skops file is a
zip archive) and refused; a skops file whose array nodes would read more than a model's file
expands to is refused before any is read (a zip bomb); the file is then inspected with
``skops.io.get_untrusted_types`` and refused if it holds a type outside :data:`TRUSTED_TYPES` and
:data:`PROJECT_TYPES` (named one by one), listing those types. Once loaded, its values are
checked before anything reads them: sparse matrices' indices, the fitted arrays of its
estimators against each other, an exported classifier's walk against its model, and decision
trees' node arrays (an index out of range in any of these crashed ``predict``, or
``load_model`` itself).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline

from attentive.errors import (
    AttentiveError,
    DataError,
    FeatureMismatchError,
    InvalidParameterError,
    UnsupportedModelError,
    UntrustedModelError,
)
from attentive.terms import KERNELS, SUPPORTED, SUPPORTED_MODELS, decompose
from attentive.validation import file_in_the_way

__all__ = [
    "PROJECT_TYPES",
    "SUPPORTED_KERNELS",
    "SUPPORTED_MODELS",
    "TRUSTED_TYPES",
    "check_loadable_size",
    "check_model_path",
    "check_n_features",
    "check_supported_model",
    "final_estimator",
    "load_model",
    "model_fingerprint",
    "save_model",
]

SUPPORTED_KERNELS = KERNELS
# The only types a model file may contain beyond what skops trusts by default (numpy, builtins and
# scikit-learn's estimators). Anything else found by get_untrusted_types is refused.
TRUSTED_TYPES: tuple[str, ...] = (
    *(row.qualified_name for row in SUPPORTED),
    "sklearn.tree._classes.DecisionTreeClassifier",
    "sklearn.tree._tree.Tree",
    "sklearn.pipeline.Pipeline",
    "sklearn.preprocessing._data.StandardScaler",
    "sklearn.preprocessing._data.MinMaxScaler",
    "sklearn.preprocessing._data.MaxAbsScaler",
    "sklearn.preprocessing._data.Normalizer",
    "scipy.sparse._csr.csr_matrix",
    "scipy.sparse._csr.csr_array",
    # A dtype, built by skops from an empty array's header (no object arrays, no call the file
    # chooses): SimpleImputer and KBinsDiscretizer keep one, so a pipeline with an imputer, as
    # the pipeline NaN message advises, saves and loads back.
    "numpy.dtype",
)

# The project's own classes an exported AttentiveClassifier holds: the classifier, its walk and
# terms, its boundary and statistics, the calibration report, the sketch and its choice. Trusted
# by their full names, never by package: a file names the types it builds, and a name under
# ``attentive.`` can be any function of the project, or anything a module imports, called with
# arguments the file chooses (a crafted file deleted a file that way through ``attentive.*``).
# tests/test_model_trust.py checks that every classifier configuration's file needs no other type.
PROJECT_TYPES: tuple[str, ...] = (
    "attentive.estimator.AttentiveClassifier",
    "attentive.terms.TermDecomposition",
    "attentive.walk.Walk",
    "attentive.boundaries.Boundary",
    "attentive.boundaries.ReferenceStats",
    "attentive.families.base.WalkStatistics",
    "attentive.families.heteroscedastic.SpreadTable",
    "attentive.families.mass.MassTable",
    "attentive.calibration.CalibrationReport",
    "attentive.sketch.choice.SketchChoice",
    "attentive.sketch.choice.SketchOption",
    "attentive.sketch.nystrom.NystromSketch",
    "attentive.sketch.nystrom.RowProjection",
    "attentive.sketch.walk.SketchedWalk",
)

_ZIP_MAGIC = b"PK\x03\x04"
# First bytes of a pickle (protocol 2+ starts with 0x80) or of the compressed joblib variants.
_PICKLE_LIKE = {
    b"\x80": "a pickle file",
    b"\x1f\x8b": "a gzip-compressed (joblib) pickle",
    b"BZh": "a bz2-compressed (joblib) pickle",
    b"\xfd7zXZ": "an xz-compressed (joblib) pickle",
    b"ZF": "a zlib-compressed joblib pickle",
    b"x": "a zlib-compressed joblib pickle",
}


def save_model(model: Any, path: str | os.PathLike) -> Path:
    """Save a fitted model as a skops file (written atomically).

    Parameters
    ----------
    model : estimator
        A supported, fitted model (see :func:`check_supported_model`).
    path : path-like
        Destination, conventionally ending in ``.skops``.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    check_supported_model(model)
    path = check_model_path(path)
    data = _skops_io().dumps(model)
    check_loadable_size(data)
    tmp = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DataError(
            f"cannot write the model to {path}: {exc.strerror or exc}; choose another path"
        ) from None
    return path


def check_model_path(path: str | os.PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path` a model file can be written to, checked before any
    work: not a directory (a file name is wanted), and not under a file.

    Raises
    ------
    InvalidParameterError
        ``path`` is a directory, or one of its parents is a file.
    """
    path = Path(path)
    if path.is_dir():
        raise InvalidParameterError(
            f"{path} is a directory; a model is saved to a file: name one, such as "
            f"{path / 'model.skops'}"
        )
    blocking = file_in_the_way(path.parent)
    if blocking is not None:
        raise InvalidParameterError(
            f"cannot save a model to {path}: {blocking} is a file, not a directory"
        )
    return path


def load_model(
    path_or_bytes: str | os.PathLike | bytes | BinaryIO, n_features: int | None = None
) -> Any:
    """Load a skops model file safely and check that the core can use it.

    Parameters
    ----------
    path_or_bytes : path-like, bytes or binary file object
        The skops file or its content (an upload).
    n_features : int, optional
        The dataset's number of features; a model fitted on another number is refused.

    Returns
    -------
    estimator
        The fitted model.

    Raises
    ------
    UntrustedModelError
        A pickle / joblib file (refused without unpickling), or a skops file containing types outside
        :data:`TRUSTED_TYPES` (the message lists them).
    UnsupportedModelError
        Not a skops file, an unsupported model type or kernel, or more than two classes; a file
        that would expand past twenty times its size and 256 MB; a sparse matrix wider than
        2**28 columns; damaged values (a sparse matrix's indices, fitted arrays that disagree,
        a walk that is not its model's, a decision tree's nodes).
    FeatureMismatchError
        The model's and the dataset's feature counts differ (the message gives both).
    DataError
        The file does not exist or is empty.
    """
    data, name = _read_bytes(path_or_bytes)
    if not data.startswith(_ZIP_MAGIC):
        what = next((w for magic, w in _PICKLE_LIKE.items() if data.startswith(magic)), None)
        if what is not None:
            raise UntrustedModelError(
                f"{name} looks like {what}; attentive never unpickles model files because "
                "unpickling can run arbitrary code. Save the model with skops instead: "
                "skops.io.dump(model, 'model.skops') (or attentive.models.save_model)"
            )
        raise UnsupportedModelError(
            f"{name} is not a skops model file (it does not start like a zip archive); save the "
            "model with skops.io.dump(model, 'model.skops')"
        )
    _check_expansion(data, name)
    try:
        untrusted = _skops_io().get_untrusted_types(data=data)
    except (MemoryError, RecursionError):
        raise UnsupportedModelError(
            f"{name}: the skops file could not be read (it needs more memory or nesting than "
            "a model's file does); save the model again with skops.io.dump(model, 'model.skops')"
        ) from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise UnsupportedModelError(
            f"{name} starts like a zip archive (as skops model files do) but cannot be read as "
            f"one ({exc}): it may be truncated or damaged; save the model again with "
            "skops.io.dump(model, 'model.skops')"
        ) from None
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise UnsupportedModelError(
            f"{name} is a zip archive but not a valid skops model file ({exc})"
        ) from None
    refused = sorted(t for t in untrusted if t not in TRUSTED_TYPES and t not in PROJECT_TYPES)
    if refused:
        raise UntrustedModelError(
            f"{name} contains types attentive does not trust, so it was not loaded: "
            f"{', '.join(refused)}. Trusted beyond numpy and scikit-learn's estimators: "
            f"{', '.join(TRUSTED_TYPES)}, and the classes of an exported AttentiveClassifier "
            "(attentive.models.PROJECT_TYPES)"
        )
    try:
        model = _skops_io().loads(data, trusted=list(untrusted))
    except Exception as exc:  # skops raises many types for damaged archives
        raise UnsupportedModelError(f"{name}: the skops file could not be read ({exc})") from None
    # Before anything reads the arrays (decompose densifies sparse coefficients): scipy's and
    # libsvm's C code trusts a sparse matrix's indices and the shapes of a model's arrays.
    held = list(_reachable(model))  # every object in it, once, for each check below
    _check_sparse(held, name)
    _check_values(model, held, name)
    try:
        check_supported_model(model)
    except AttentiveError:
        raise
    except (TypeError, ValueError, AttributeError, IndexError, KeyError) as exc:
        raise _refuse(name, "the model", f"{type(exc).__name__}: {exc}") from None
    _check_trees(held, name)
    _check_walks(held, name)
    if n_features is not None:
        check_n_features(model, n_features)
    return model


# What a model file may expand to when loaded: arrays are stored deflated, and one member can be
# named by many nodes (each read again). Beyond this, twenty times the file and 256 MB, it is
# refused before skops reads any array.
_EXPANSION_FACTOR = 20
_EXPANSION_SLACK = 256 << 20
# A model's schema.json is kilobytes to a few megabytes (a calibrated classifier of MNIST 8 vs
# rest: 0.67 MB), but skops writes an object again wherever it is held: a pipeline over 784 named
# columns (a ColumnTransformer) took 2.5 MB a copy and, held four times by a classifier, 10 MB,
# which 8 MB refused. Parsed, JSON takes up to ~25 times its size (a model's: 6 times, +195 MB
# and 1.0 s to load a 33 MB schema; 32 MB of "{}, " took 550 MB and 0.9 s). skops stores its
# schema as it is (or deflated ~10-20 times, with compression=), so beyond _SCHEMA_SMALL a schema
# must be stored at no more than _SCHEMA_RATIO times its packed size: a few kilobytes deflating
# to 32 MB (an upload of the dashboard's) are refused before they are parsed. save_model
# refuses what this refuses (check_loadable_size).
_SCHEMA_LIMIT = 32 << 20
_SCHEMA_SMALL = 8 << 20
_SCHEMA_RATIO = 40


def _schema_refusal(info: zipfile.ZipInfo) -> str | None:
    """Why a schema.json of this size would not be read, or None."""
    size, packed = info.file_size, max(info.compress_size, 1)
    if size > _SCHEMA_LIMIT:
        return (
            f"its schema.json would take {size / 2**20:,.0f} MB (a model's takes a few, at most "
            f"{_SCHEMA_LIMIT >> 20} here)"
        )
    if size > _SCHEMA_SMALL and size > _SCHEMA_RATIO * packed:
        return (
            f"its schema.json would take {size / 2**20:,.0f} MB from {packed / 2**10:,.0f} KB "
            f"packed (more than {_SCHEMA_SMALL >> 20} MB, at more than {_SCHEMA_RATIO} times "
            "its packed size)"
        )
    return None


def check_loadable_size(data: bytes) -> None:
    """Refuse to write a model file (``data``, skops bytes) that :func:`load_model` would refuse
    for its size: found when saving, not on loading it elsewhere.

    Raises
    ------
    DataError
        Its schema is beyond what :func:`load_model` reads."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("schema.json")
    refusal = _schema_refusal(info)
    if refusal is not None:
        raise DataError(
            f"this model's skops file could not be loaded: {refusal.removeprefix('its ')}, "
            "more than load_model reads. skops writes an object again wherever the model holds "
            "it (a pipeline's steps and column names among them): fewer named columns or steps "
            "make it smaller"
        )


def _check_expansion(data: bytes, name: str) -> None:
    """Refuse a skops archive whose nodes would read more bytes than a model's file expands to
    (a zip bomb: a 257 KB file naming one deflated member of zeros 400 times asked for 100 GB).

    skops reads an array node's member while it builds its tree, already inside
    ``get_untrusted_types``; the members' sizes in the archive's directory bound what each read
    returns, so the total is known before anything is decompressed. A node that comes again
    under the same ``__id__`` is read once."""
    limit = _EXPANSION_FACTOR * len(data) + _EXPANSION_SLACK
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            sizes = {info.filename: info.file_size for info in archive.infolist()}
            if "schema.json" not in sizes:
                return  # not a skops file: skops says so
            refusal = _schema_refusal(archive.getinfo("schema.json"))
            if refusal is not None:
                raise UnsupportedModelError(f"{name}: {refusal}; too large to load here")
            schema = json.loads(archive.read("schema.json"))
    except (zipfile.BadZipFile, OSError, ValueError, RecursionError):
        return  # damaged: skops names the problem
    total, seen, stack = 0, set(), [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            member, ident = node.get("file"), node.get("__id__")
            if isinstance(member, str):
                # skops reuses a node it has built only under a true (non-zero) __id__; any
                # other node reads its member again.
                if not isinstance(ident, int | str) or isinstance(ident, bool):
                    ident = None
                if not ident or (ident, member) not in seen:
                    seen.add((ident, member))
                    total += sizes.get(member, 0)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if total > limit:
        raise UnsupportedModelError(
            f"{name}: loading it would read {total / 2**20:,.0f} MB of arrays from a "
            f"{len(data) / 2**20:,.1f} MB file (more than {_EXPANSION_FACTOR} times its size and "
            f"{_EXPANSION_SLACK >> 20} MB); this is not a model's skops file"
        )


def _reachable(model: Any):
    """Every object reachable from the loaded ``model``, once each (numbers and strings left out):
    its attributes, containers and the items of object arrays."""
    stack, seen = [model], set()
    while stack:
        m = stack.pop()
        if id(m) in seen or m is None or isinstance(m, str | bytes | int | float | np.generic):
            continue
        seen.add(id(m))
        yield m
        if isinstance(m, np.ndarray):
            if m.dtype.hasobject:
                stack.extend(m.ravel().tolist())
        elif sp.issparse(m):
            continue
        elif isinstance(m, dict):
            stack.extend(m.values())
        elif isinstance(m, list | tuple | set | frozenset):
            stack.extend(m)
        elif hasattr(m, "__dict__"):
            stack.extend(vars(m).values())


def _refuse(name: str, what: str, problem: str) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"{name}: {what} in it is damaged ({problem}); save the model again with "
        "skops.io.dump(model, 'model.skops')"
    )


#: The widest sparse matrix a loaded model may hold, in bytes of one entry per column (2**28
#: columns): evaluating it allocates that much per copy (a transpose's row pointers, a densified
#: coefficient row). A hashed-features model 2**26 wide (512 MB) loads; a 10 kB file that
#: declared a coefficient row 10**9 wide asked for 7.45 GiB.
MAX_SPARSE_WIDTH_BYTES = 2 << 30


def _check_sparse(held: list, name: str) -> None:
    """Refuse sparse matrices whose index arrays do not describe a matrix of their shape, and
    those too wide to evaluate (:data:`MAX_SPARSE_WIDTH_BYTES`).

    skops rebuilds a CSR matrix from its data, indices and indptr with scipy's cheap format
    check (lengths and the last pointer only); scipy's sparsetools, scikit-learn's Cython and
    libsvm index with the values unchecked: a column index past the width or a decreasing row
    pointer crashed the process (a segmentation fault) in ``load_model`` (densifying a sparse
    ``dual_coef_``), in ``fit`` and in ``predict``."""
    for m in held:
        if not sp.issparse(m):
            continue
        if m.format not in ("csr", "csc") or m.ndim != 2:
            raise _refuse(name, "a sparse matrix", f"format {m.format!r}, {m.ndim} dimensions")
        if 8 * max(m.shape) > MAX_SPARSE_WIDTH_BYTES:
            raise UnsupportedModelError(
                f"{name}: a sparse matrix in it is {max(m.shape):,} wide (shape {m.shape}, "
                f"{m.nnz:,} values); evaluating it would allocate {8 * max(m.shape) / 2**30:.1f} "
                f"GiB per copy, more than the {MAX_SPARSE_WIDTH_BYTES / 2**30:.0f} GiB attentive "
                "allows (2**28 features)"
            )
        try:
            m.check_format(full_check=True)
        except (ValueError, TypeError, OverflowError) as exc:
            raise _refuse(name, "a sparse matrix", str(exc)) from None


def _array(value: Any, shape: tuple[int | None, ...], what: str) -> str | None:
    """A problem with ``value`` as a finite real array (dense or sparse) of ``shape`` (None: any
    length there), or None."""
    if sp.issparse(value):
        dims, values = value.shape, value.data
    else:
        try:
            values = np.asarray(value)
        except Exception:
            return f"{what} is not an array"
        dims = values.shape
    if values.dtype.hasobject:
        return f"{what} holds Python objects"
    if len(dims) != len(shape) or any(
        n is not None and d != n for d, n in zip(dims, shape, strict=True)
    ):
        want = " × ".join("n" if n is None else str(n) for n in shape) or "a scalar"
        return f"{what} of shape {dims}, expected {want}"
    if values.dtype.kind not in "fiub":
        return f"{what} of dtype {values.dtype}"
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        return f"{what} holds NaN or infinite values"
    return None


# libsvm takes the degree as a C int; the polynomial kernel squares once per bit of it.
_MAX_DEGREE = 2**31 - 1


def _svc_problem(m: Any) -> str | None:
    sv, dual = m.support_vectors_, getattr(m, "_dual_coef_", m.dual_coef_)
    if getattr(sv, "ndim", 0) != 2:
        return f"support_vectors_ of shape {getattr(sv, 'shape', None)}"
    n_sv, width = sv.shape
    if m.kernel == "precomputed" or callable(m.kernel):
        return f"kernel {m.kernel!r} inside another model"
    if (sv.data if sp.issparse(sv) else np.asarray(sv)).dtype not in (np.float32, np.float64):
        return f"support_vectors_ of dtype {sv.dtype} (libsvm reads float64)"
    if bool(getattr(m, "_sparse", sp.issparse(sv))) != sp.issparse(sv):
        return "support_vectors_ sparse and the model not, or the other way round"
    n_support = np.asarray(getattr(m, "_n_support", ()))
    problem = (
        _array(sv, (n_sv, width), "support_vectors_")
        or _array(dual, (1, n_sv), "dual_coef_")
        or _array(m.dual_coef_, (1, n_sv), "dual_coef_")
        or _array(m._intercept_, (1,), "intercept_")
        or _array(m.intercept_, (1,), "intercept_")
        or _array(n_support, (2,), "n_support_")
        or _array(m.support_, (n_sv,), "support_")
    )
    if problem:
        return problem
    if n_support.dtype.kind not in "iu" or n_support.min() < 0 or n_support.sum() != n_sv:
        return f"n_support_ {n_support.tolist()} for {n_sv} support vectors"
    width_in = getattr(m, "n_features_in_", width)
    if int(width_in) != width:
        return f"{width} columns of support vectors for {int(width_in)} features"
    gamma, coef0, degree = m._gamma, m.coef0, m.degree
    if not (isinstance(gamma, int | float | np.number) and math.isfinite(gamma) and gamma >= 0):
        return f"gamma {gamma!r}"
    if not (isinstance(coef0, int | float | np.number) and math.isfinite(coef0)):
        return f"coef0 {coef0!r}"
    if not (isinstance(degree, int | np.integer) and 0 <= degree <= _MAX_DEGREE):
        return f"degree {degree!r}"
    return None


def _linear_problem(m: Any) -> str | None:
    coef = m.coef_
    width = int(getattr(m, "n_features_in_", np.shape(coef)[-1]))
    shape = (width,) if np.ndim(coef) == 1 else (1, width)
    return (
        _array(coef, shape, "coef_")
        or (None if np.size(m.intercept_) <= 1 else f"intercept_ of shape {np.shape(m.intercept_)}")
        or _array(np.ravel(m.intercept_), (None,), "intercept_")
    )


def _head_problem(m: Any) -> str | None:
    """Scalers and PCA: their vectors one value per feature, components over the features."""
    from sklearn.decomposition import PCA

    width = getattr(m, "n_features_in_", None)
    if width is None:
        return None
    width = int(width)
    if isinstance(m, PCA):
        comps = getattr(m, "components_", None)
        k = int(getattr(m, "n_components_", -1))
        return (
            _array(comps, (k, width), "components_")
            or _array(m.mean_, (width,), "mean_")
            or _array(m.explained_variance_, (k,), "explained_variance_")
        )
    for attr in ("mean_", "scale_", "var_", "min_", "data_min_", "data_max_", "max_abs_"):
        value = getattr(m, attr, None)
        if value is not None:
            problem = _array(value, (width,), attr)
            if problem:
                return problem
    return None


def _classes_problem(m: Any) -> str | None:
    classes = np.asarray(m.classes_)
    if classes.ndim != 1 or len(classes) != 2:
        return f"classes_ of shape {classes.shape} (a binary classifier has two)"
    if classes.dtype.hasobject and not all(
        isinstance(c, str | int | float | bool | np.generic) for c in classes.tolist()
    ):
        return "classes_ holding objects other than labels"
    return None


def _check_values(model: Any, held: list, name: str) -> None:
    """Refuse fitted scikit-learn models whose arrays disagree with each other or with their
    features (shapes, dtypes, NaN), and kernel parameters out of range.

    A file can give any value to a trusted estimator's attributes. libsvm trusts
    ``support_vectors_``, ``dual_coef_`` and ``n_support_`` to agree; the term decomposition
    takes a shorter ``dual_coef_`` as fewer terms, NaN parameters as NaN scores, and an
    ``intercept_`` of length 0 raised an IndexError."""
    from sklearn.decomposition import PCA
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
    from sklearn.svm._base import BaseLibSVM

    linear = tuple(row.model_class for row in SUPPORTED if row.term == "feature")
    finals = _finals(model)
    for m in held:
        if not isinstance(m, BaseEstimator):
            continue
        try:
            skip = id(m) in finals and _not_taken(m)
        except (TypeError, ValueError):  # a kernel that is an array, say: checked below
            skip = False
        if skip:
            # The model itself (or a pipeline's or a wrapper's last step) of a kind the project
            # does not take: check_supported_model names it (a one-class SVM, a multiclass
            # model, a precomputed kernel). Held anywhere else (AdaBoost's learners), it is
            # checked as any other: predict calls it.
            continue
        try:
            problem = None
            if isinstance(m, BaseLibSVM) and hasattr(m, "support_vectors_"):
                problem = _classes_problem(m) or _svc_problem(m)
            elif isinstance(m, linear) and hasattr(m, "coef_"):
                problem = _classes_problem(m) or _linear_problem(m)
            elif isinstance(m, AdaBoostClassifier) and hasattr(m, "estimators_"):
                problem = _classes_problem(m) or _boost_problem(m)
            elif isinstance(m, StandardScaler | MinMaxScaler | MaxAbsScaler | PCA):
                problem = _head_problem(m)
        except (TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            raise _refuse(name, f"a {type(m).__name__}", problem)


def _finals(model: Any) -> set[int]:
    """The ids of the model a file holds and of what it wraps, down to the estimator whose
    terms are walked: an AttentiveClassifier's ``estimator_``, a FrozenEstimator's
    ``estimator``, a Pipeline's last step."""
    out, stack = set(), [model]
    while stack:
        m = stack.pop()
        if m is None or id(m) in out:
            continue
        out.add(id(m))
        if hasattr(m, "walk_"):
            # Its model, and the estimator it was given (a template, fitted or not, that is
            # cloned or wrapped: held in the file, never predicted with).
            stack += [getattr(m, "estimator_", None), getattr(m, "estimator", None)]
        elif type(m).__name__ == "FrozenEstimator":
            stack.append(getattr(m, "estimator", None))
        elif hasattr(m, "steps") and isinstance(m.steps, list) and m.steps:
            last = m.steps[-1]
            if isinstance(last, tuple) and len(last) == 2:
                stack.append(last[1])
    return out


def _not_taken(m: Any) -> bool:
    """Whether ``m`` is of a kind the project does not take, which ``check_supported_model``
    names: no classes (a one-class SVM, a regressor), other than two, a precomputed or
    callable kernel."""
    classes = getattr(m, "classes_", None)
    kernel = getattr(m, "kernel", None)
    return (
        classes is None
        or (np.ndim(classes) == 1 and len(classes) != 2)
        or kernel == "precomputed"
        or callable(kernel)
    )


def _boost_problem(m: Any) -> str | None:
    """AdaBoost's weights: one per learner asked for (fewer learners where boosting stopped
    early), finite, none negative, and not all 0 over the learners it has (the terms' weights
    are normalised by their sum: 0 / 0)."""
    weights = m.estimator_weights_
    problem = _array(weights, (None,), "estimator_weights_")
    if problem:
        return problem
    n = len(m.estimators_)
    if len(weights) < n:
        return f"{len(weights)} estimator weights for {n} learners"
    # All of them: the terms' weights (and scikit-learn's scores) are normalised by their sum,
    # unused slots (boosting stopped early) included.
    every = np.asarray(weights, dtype=np.float64)
    if every.min(initial=0.0) < 0 or not every.sum() > 0:
        return f"estimator weights {every.tolist()[:8]} (at least one positive, none negative)"
    return None


def _check_walks(held: list, name: str) -> None:
    """Refuse an exported classifier whose walk is not its model's.

    ``predict`` evaluates ``walk_.terms`` (and a sketched walk's ``walk``), stored in the file
    beside ``estimator_``: the checks above read ``estimator_``, so the terms walked must be
    its decomposition, and the order a permutation of them."""
    from attentive.estimator import AttentiveClassifier

    for clf in held:
        if not isinstance(clf, AttentiveClassifier) or not hasattr(clf, "walk_"):
            continue
        try:
            problem = _walk_problem(clf)
        except (TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            raise _refuse(name, "the classifier's walk", problem)


def _same_terms(a: Any, b: Any) -> bool:
    """Whether stored terms ``a`` are the decomposition ``b`` of the stored model: the same
    learners and head steps (skops keeps an object held twice as one), the same numbers to
    within the 1e-9 relative error SPEC §1 allows (a later version's arithmetic may round
    them otherwise)."""
    return (
        a.kind == b.kind
        and a.kernel == b.kernel
        and all(
            _same_value(getattr(a, f), getattr(b, f))
            for f in ("kernel_params", "intercept", "weights", "classes", "support_vectors")
        )
        and (a.learners is None) == (b.learners is None)
        and (a.learners is None or [id(t) for t in a.learners] == [id(t) for t in b.learners])
        and (a.head is None) == (b.head is None)
        and (a.head is None or [id(s) for _, s in a.head.steps] == [id(s) for _, s in b.head.steps])
    )


def _walk_problem(clf: Any) -> str | None:
    from attentive.walk import Walk

    terms = getattr(clf, "terms_", None)
    if terms is None or not _same_terms(terms, decompose(clf.estimator_)):
        return "its terms are not its model's"
    n = terms.n_terms
    if int(getattr(clf, "n_terms_", n)) != n:
        return f"n_terms_ {clf.n_terms_} for {n} terms"
    for attr in ("offset_", "theta_s_", "threshold_"):  # a NaN θ_S made every score −0.0
        value = getattr(clf, attr, 0.0)
        if not isinstance(value, int | float | np.number) or not math.isfinite(value):
            return f"{attr} {value!r}"
    sketched = getattr(clf, "sketched_walk_", None)
    walks = [clf.walk_] + ([] if sketched is None else [getattr(sketched, "walk", None)])
    for walk in walks:
        if not isinstance(walk, Walk) or walk.terms is not terms:
            return "a walk of other terms than its model's"
        order = np.asarray(walk.order)
        if (
            order.shape != (n,)
            or order.dtype.kind not in "iu"
            or not np.array_equal(np.sort(order), np.arange(n))
        ):
            return f"an order that is not a permutation of its {n} terms"
        for attr in ("mu", "ordered_weights", "ordered_mu"):
            problem = _array(getattr(walk, attr), (n,), attr)
            if problem:
                return problem
    # Fields a walk or a sketch derives from its others (the weights in walk order, a sketched
    # walk's β and residual means, a sketch's row projection) are stored too, and skops does
    # not derive them again: they must be what the others give (negated ordered weights
    # loaded, and predicted the full model's label on 48 % of rows).
    derived = [clf.walk_]
    if sketched is not None:
        problem = _sketch_problem(sketched, n)
        if problem:
            return problem
        derived += [sketched, sketched.walk, sketched.sketch]
    for obj in derived:
        problem = _derived_problem(obj)
        if problem:
            return problem
    return _boundary_problem(getattr(clf, "boundary_", None), n)


def _boundary_problem(boundary: Any, n: int) -> str | None:
    """The stopping rule: a :class:`attentive.boundaries.Boundary` over the ``n`` positions of
    the walk, of numbers (±inf: never; NaN crosses nothing), whose own checks pass, and a
    budget within the terms."""
    from attentive.boundaries import Boundary

    if not isinstance(boundary, Boundary):
        return f"a boundary of type {type(boundary).__name__}"
    for attr in ("lower", "upper", "estimate_slope", "estimate_intercept", "mass"):
        value = getattr(boundary, attr)
        if value is None and attr not in ("lower", "upper"):
            continue
        values = np.asarray(value)
        if values.shape != (n,) or values.dtype.kind not in "fiub":
            return f"the boundary's {attr} of shape {values.shape}, dtype {values.dtype}"
    budget = boundary.budget
    if budget is not None and not (isinstance(budget, int | np.integer) and 0 <= budget <= n):
        return f"the boundary's budget {budget!r} for {n} terms"
    try:
        dataclasses.replace(boundary)  # its own checks
    except Exception as exc:
        return f"the boundary: {exc}"
    return None


def _sketch_problem(sketched: Any, n: int) -> str | None:
    """A sketched walk's own fields: a sketch of ``n`` terms whose arrays agree in shape (k
    directions over d features, m landmarks) and are finite, and a finite γ ≥ 0; checked
    before anything is derived from them (a feature mean of shape (m, 1) broadcast the
    residual means to n × n)."""
    from attentive.sketch.nystrom import NystromSketch

    sketch = getattr(sketched, "sketch", None)
    if not isinstance(sketch, NystromSketch):
        return f"a sketch of type {type(sketch).__name__}"
    gamma = sketch.gamma
    if not (isinstance(gamma, int | float | np.number) and math.isfinite(gamma) and gamma >= 0):
        return f"the sketch's gamma {gamma!r}"
    components = np.asarray(sketch.components)
    if components.ndim != 2:
        return f"the sketch's components of shape {components.shape}"
    k, d = components.shape
    m = np.shape(sketch.landmarks)[0] if np.ndim(sketch.landmarks) == 2 else -1
    return (
        _array(sketch.mean, (d,), "the sketch's mean")
        or _array(components, (k, d), "the sketch's components")
        or _array(sketch.landmarks, (m, k), "the sketch's landmarks")
        or _array(sketch.landmark_inverse, (m, m), "the sketch's landmark_inverse")
        or _array(sketch.term_factors, (n, m), "the sketch's term_factors")
        or _array(sketched.feature_mean, (m,), "the sketched walk's feature_mean")
    )


def _derived_problem(obj: Any) -> str | None:
    """Whether a frozen dataclass's fields that ``__post_init__`` derives (``init=False``) are
    what its other fields give, to 1e-9."""
    if not dataclasses.is_dataclass(obj):
        return f"a {type(obj).__name__} where a walk or sketch was expected"
    try:
        fresh = dataclasses.replace(obj)
    except Exception as exc:  # its own checks (a sketch of other terms than the walk's)
        return f"{type(obj).__name__}: {exc}"
    for f in dataclasses.fields(obj):
        if not f.init and not _same_value(getattr(obj, f.name), getattr(fresh, f.name)):
            return f"{type(obj).__name__}.{f.name} is not what its other fields give"
    return None


def _same_value(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same values: numbers and float arrays to within 1e-9
    (relative), sparse matrices exactly, dataclasses and dicts field by field."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same_value(a[k], b[k]) for k in a)
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same_value(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=1e-9, atol=0.0))
        return bool(np.array_equal(a, b))  # labels (strings in an object array, say)
    if sp.issparse(a) or sp.issparse(b):
        both = sp.issparse(a) and sp.issparse(b) and a.shape == b.shape
        return both and not np.any((a - b).data)
    if isinstance(a, float | np.floating) or isinstance(b, float | np.floating):
        numbers = int | float | np.number
        return (
            isinstance(a, numbers)
            and isinstance(b, numbers)
            and math.isclose(float(a), float(b), rel_tol=1e-9)
        )
    return bool(a == b)


def _check_trees(held: list, name: str) -> None:
    """Refuse decision trees whose node arrays do not make a tree over the model's features.

    ``sklearn.tree._tree.Tree`` (AdaBoost's learners) checks its arrays' types and shapes when
    loaded, not the indices in them; a child or feature index out of range makes ``predict`` read
    outside its arrays and crash the process. Every tree reachable from the loaded object is
    checked, wherever it is held (an exported classifier's terms hold the learners too)."""
    from sklearn.tree import DecisionTreeClassifier

    for m in held:
        if isinstance(m, DecisionTreeClassifier) and hasattr(m, "tree_"):
            problem = _tree_problem(m.tree_, getattr(m, "n_features_in_", None))
            if problem:
                raise UnsupportedModelError(
                    f"{name}: a decision tree in it is damaged ({problem}); save the model "
                    "again with skops.io.dump(model, 'model.skops')"
                )


def _tree_problem(tree: Any, n_features: int | None) -> str | None:
    n = int(tree.node_count)
    left, right = np.asarray(tree.children_left), np.asarray(tree.children_right)
    feature = np.asarray(tree.feature)
    if n < 1 or any(a.shape != (n,) for a in (left, right, feature, np.asarray(tree.threshold))):
        return f"{n} nodes, but node arrays of other lengths"
    if np.asarray(tree.value).shape[0] != n:
        return f"{n} nodes, but {np.asarray(tree.value).shape[0]} node values"
    leaf = left == -1
    if not np.array_equal(leaf, right == -1):
        return "a node with one child"
    nodes = np.arange(n)
    inner = ~leaf
    # Children come after their parent (so no cycle) and inside the arrays.
    for child in (left, right):
        if np.any((child[inner] <= nodes[inner]) | (child[inner] >= n)):
            return "a child index outside the tree"
    width = int(tree.n_features) if n_features is None else int(n_features)
    if int(tree.n_features) != width or np.any((feature[inner] < 0) | (feature[inner] >= width)):
        return f"a split on a feature outside the model's {width}"
    return None


def _skops_io():
    """``skops.io``, imported when a model is saved or loaded (about a second of import time that
    the dashboard's first page and the library's import need not pay)."""
    import skops.io

    return skops.io


def _read_bytes(source: Any) -> tuple[bytes, str]:
    if isinstance(source, bytes | bytearray | memoryview):
        data, name = bytes(source), "the uploaded model"
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise DataError(f"model file not found: {path}")
        data, name = path.read_bytes(), path.name
    elif hasattr(source, "read"):
        data, name = source.read(), Path(getattr(source, "name", "the uploaded model")).name
    else:
        raise UnsupportedModelError(
            f"expected a path, bytes or a binary file object, got {type(source).__name__}"
        )
    if not data:
        raise DataError(f"{name} is empty; expected a skops model file")
    return data, name


def final_estimator(model: Any) -> Any:
    """The last step of a Pipeline (recursively), or the model itself."""
    while isinstance(model, Pipeline):
        model = model.steps[-1][1]
    return model


def check_supported_model(model: Any) -> None:
    """Raise :class:`UnsupportedModelError` unless the core can decompose ``model`` into terms.

    The supported models are :data:`attentive.terms.SUPPORTED` (fitted, binary), or a Pipeline
    ending in one of them; this is :func:`attentive.terms.decompose`'s own check. A fitted
    :class:`~attentive.AttentiveClassifier` is checked through the model it wraps.
    """
    from attentive.estimator import AttentiveClassifier

    if isinstance(model, AttentiveClassifier):
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(model)
        except Exception:
            raise UnsupportedModelError(
                "the AttentiveClassifier is not fitted; fit it before saving it"
            ) from None
        model = model.estimator_
    decompose(model)


def check_n_features(model: Any, n_features: int) -> None:
    """Raise :class:`FeatureMismatchError` if ``model`` was fitted on another number of features."""
    expected = getattr(model, "n_features_in_", None)
    if expected is not None and int(expected) != int(n_features):
        raise FeatureMismatchError(
            f"the model expects {int(expected)} features but the dataset has {int(n_features)}; "
            "load a model trained on this dataset"
        )


def model_fingerprint(model: Any) -> str:
    """Short hex digest of a model's type, parameters and fitted state (stable across save/load)."""
    h = hashlib.blake2b(digest_size=8)
    _feed(h, model, depth=0)
    return h.hexdigest()


def _feed(h: Any, obj: Any, depth: int) -> None:
    if depth > 20:
        return
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, np.generic):
        _feed(h, obj.item(), depth + 1)
    elif isinstance(obj, np.ndarray):
        h.update(f"nd{obj.dtype.str}{obj.shape};".encode())
        if obj.dtype.names:  # structured (sklearn's tree nodes): fields, never padding bytes
            for name in obj.dtype.names:
                _feed(h, np.ascontiguousarray(obj[name]), depth + 1)
        elif obj.dtype.hasobject:
            for item in obj.ravel():
                _feed(h, item, depth + 1)
        else:
            h.update(np.ascontiguousarray(obj).view(np.uint8).tobytes())
    elif sp.issparse(obj):
        csr = sp.csr_matrix(obj)
        h.update(f"csr{csr.shape};".encode())
        for part in (csr.data, csr.indices, csr.indptr):
            _feed(h, part, depth + 1)
    elif isinstance(obj, list | tuple):
        h.update(f"{type(obj).__name__}[{len(obj)}];".encode())
        for item in obj:
            _feed(h, item, depth + 1)
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}];".encode())
        for key in sorted(obj, key=str):
            if isinstance(key, str) and key.startswith("_sklearn"):
                continue  # the sklearn version that pickled it, not the model
            _feed(h, str(key), depth + 1)
            _feed(h, obj[key], depth + 1)
    else:
        h.update(f"{type(obj).__module__}.{type(obj).__qualname__};".encode())
        state = obj.__getstate__() if hasattr(obj, "__getstate__") else None
        if isinstance(obj, BaseEstimator) or isinstance(state, dict | tuple | list):
            _feed(h, state, depth + 1)
