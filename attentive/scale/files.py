"""Score files: what ``python -m attentive score`` runs.

:func:`score_file` checks the output location, loads the classifier, starts (or joins) a Dask
cluster, reads the input with :func:`~attentive.scale.reading.read_input` (the project's one
reader, shared with the dashboard's uploads), evaluates it with
:func:`~attentive.scale.evaluate.score_dask` and writes it with
:func:`~attentive.scale.writing.write_scores`: a Parquet directory that appears only once complete.
"""

from __future__ import annotations

import ast
import contextlib
import lzma
import numbers
import os
import re
import socket
import time
import uuid
import zlib
from pathlib import Path

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from attentive.data.reader import compression_of, open_binary
from attentive.errors import DataError, InvalidParameterError
from attentive.estimator import AttentiveClassifier, _leading_column_transformer
from attentive.models.persistence import load_model
from attentive.scale.evaluate import score_dask
from attentive.scale.reading import check_chunk_rows, check_columns, check_options, read_input
from attentive.scale.writing import (
    ScoreSummary,
    check_output,
    output_error,
    sigint_ignored,
    write_scores,
)

__all__ = ["load_classifier", "local_cluster", "score_file"]


def load_classifier(path: str | os.PathLike) -> AttentiveClassifier:
    """Load an exported :class:`~attentive.AttentiveClassifier` (a skops file) safely, with
    :func:`attentive.models.load_model` (pickles and untrusted types refused, the wrapped model
    checked), and check that it is one."""
    model = load_model(path)
    if not isinstance(model, AttentiveClassifier):
        raise InvalidParameterError(
            f"{Path(path).name} holds a model of type {type(model).__name__}, not an "
            "AttentiveClassifier; export one from the "
            "dashboard, or wrap the fitted model so that fit does not train it again — "
            "AttentiveClassifier(FrozenEstimator(model)).fit(X_ref, y_ref), FrozenEstimator from "
            "sklearn.frozen — and save that with attentive.models.save_model (skops)."
        )
    return model


def _check_workers(n_workers) -> None:
    if n_workers is not None and (
        isinstance(n_workers, bool) or not isinstance(n_workers, numbers.Integral) or n_workers < 1
    ):
        raise InvalidParameterError(
            f"n_workers must be a whole number ≥ 1 (or None: one per core), got {n_workers!r}"
        )


def local_cluster(n_workers: int | None = None, **kwargs):
    """A ``distributed.LocalCluster`` on 127.0.0.1 only: one single-threaded worker process per
    core (or ``n_workers``), no dashboard.

    The scheduler still serves its health routes over HTTP on 127.0.0.1 (port 8787, or a free one
    when that is taken: the warning saying so is silenced). The worker processes ignore Ctrl-C,
    which a terminal sends to every process of the command: the process that started them stops
    the run, removes what it had written and closes the cluster.
    """
    import warnings

    from distributed import LocalCluster

    _check_workers(n_workers)
    kwargs = {
        "n_workers": n_workers or len(os.sched_getaffinity(0)),
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": None,
        **kwargs,
    }
    with warnings.catch_warnings(), sigint_ignored():
        warnings.filterwarnings("ignore", "Port .* is already in use", UserWarning)
        return LocalCluster(**kwargs)


def _decompressed_copy(path: Path, output: Path) -> Path | None:
    """A compressed text input decompressed once, beside the output (which every worker sees);
    ``None`` for an input that is not compressed. Each chunk of a compressed file would otherwise
    decompress it from the start."""
    if path.is_dir():
        return None
    with open(path, "rb") as f:
        compression = compression_of(f.read(8))
    if compression is None:
        return None
    copy = output.with_name(f".{output.name}.{uuid.uuid4().hex}.input")
    try:
        with open_binary(path, compression) as source, _created(copy) as target:
            while piece := _read_piece(source, path.name):
                try:
                    target.write(piece)
                except OSError as exc:
                    raise output_error(exc, copy) from None
    except BaseException:
        copy.unlink(missing_ok=True)
        raise
    return copy


def _created(path: Path):
    try:
        return open(path, "xb")
    except OSError as exc:
        raise output_error(exc, path) from None


def _read_piece(source, name: str) -> bytes:
    try:
        return source.read(16 * 1024 * 1024)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise DataError(f"{name}: compressed file is truncated or corrupt ({exc})") from None


def _client(scheduler: str | None, cluster):
    """A client of the run's local ``cluster``, or of the running ``scheduler`` the user named
    (an address it cannot reach is refused by name, not raised as a connection error)."""
    from distributed import Client

    if not scheduler:
        return Client(cluster)
    try:
        _refused(scheduler)
        return Client(scheduler)
    except (OSError, ValueError, TypeError) as exc:  # (TimeoutError is an OSError)
        raise InvalidParameterError(
            f"cannot connect to the Dask scheduler {scheduler!r} ({exc}); expected the address "
            "of a running scheduler, such as tcp://127.0.0.1:8786"
        ) from None


#: How long :func:`_refused` waits for a TCP scheduler's port to answer, s.
PROBE_SECONDS = 5.0


def _refused(scheduler: str) -> None:
    """Raise ``ConnectionRefusedError`` at once where nothing listens on a TCP scheduler's
    address: Dask's client retried a refused connection until its connect timeout, 30 s by
    default, before the same refusal. Any other outcome (an answer, a host that does not reply,
    an address or scheme this does not parse) is left to the client."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    try:
        scheme, location = parse_address(scheduler)
        if scheme != "tcp":
            return
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            return
    except ConnectionRefusedError:
        raise ConnectionRefusedError(
            f"nothing listens on {host}:{port}: connection refused"
        ) from None
    except OSError:
        return


def score_file(
    model: str | os.PathLike | AttentiveClassifier,
    input: str | os.PathLike,
    output: str | os.PathLike,
    *,
    scheduler: str | None = None,
    n_workers: int | None = None,
    chunk_rows: int = 100_000,
    format: str | None = None,
    zero_based: bool | None = None,
    header: bool | None = None,
    exclude: tuple[str, ...] = (),
    progress: bool | None = None,
    overwrite: bool = False,
    sep: str | None = None,
) -> ScoreSummary:
    """Score a file with an exported classifier on Dask and write the scores as Parquet.

    ``model`` is a skops file (loaded with :func:`load_classifier`) or a fitted classifier.
    Without ``scheduler`` a :func:`local_cluster` is started for the run and closed after it;
    with one (``tcp://host:port``) that cluster is used. The output location is checked before
    any work; a compressed text input is decompressed once into a hidden file beside the output,
    removed at the end. See :func:`~attentive.scale.reading.read_input` and
    :func:`~attentive.scale.writing.write_scores` for the other parameters.
    """
    from attentive.scale.quiet import QuietDataErrors

    started = time.perf_counter()
    _check_workers(n_workers)  # (before any work)
    if n_workers is not None and scheduler:
        raise InvalidParameterError(
            "n_workers sizes the local cluster; with a scheduler, the scheduler's workers run"
        )
    input, output = Path(input), Path(output)
    # The input's format and the options given for it, from its first bytes: refused before the
    # input is decompressed or a cluster started.
    check_chunk_rows(chunk_rows)
    # (How the input is read: the same for every check and for the reading.)
    reading = dict(format=format, header=header, exclude=exclude, name=input.name, sep=sep)
    check_options(input, zero_based=zero_based, **reading)
    src, dst = input.resolve(), output.resolve()
    if src == dst or dst in src.parents or src in dst.parents:
        raise InvalidParameterError(
            f"the output {output} is the input {input}, holds it or lies in it: name a new output"
        )
    output = check_output(output, overwrite)
    clf = model if isinstance(model, AttentiveClassifier) else load_classifier(model)
    with _text_for_the_model(clf):
        # A CSV file's first line, or Parquet schemas, against the model's features, before a
        # cluster is started.
        check_columns(input, clf, **reading)
        copy = cluster = None
        try:
            cluster = None if scheduler else local_cluster(n_workers)
            with _client(scheduler, cluster) as client:
                if cluster is not None:
                    # The run's own workers: a bad row is told once, by the error the run raises.
                    client.register_plugin(QuietDataErrors())
                # (After the scheduler answered: a bad address is refused before this work.)
                copy = _decompressed_copy(input, output)
                X = read_input(
                    copy or input, clf, chunk_rows=chunk_rows, zero_based=zero_based, **reading
                )
                return write_scores(
                    score_dask(clf, X),
                    output,
                    n_terms=clf.n_terms_,
                    client=client,
                    progress=progress,
                    overwrite=overwrite,
                    started=started,
                    source=Path(input).name,
                )
        finally:
            if cluster is not None:
                cluster.close()
            if copy is not None:
                copy.unlink(missing_ok=True)


@contextlib.contextmanager
def _text_for_the_model(clf: AttentiveClassifier):
    """A value that is not a number in a column the model's ColumnTransformer may take text in
    (an encoder's, one it drops, a custom step's): the file may be right, and the command the
    wrong tool. A column it scales or passes to the model is the file's to mend."""
    try:
        yield
    except DataError as exc:
        if "not a number" not in str(exc) and "string values" not in str(exc):
            raise
        named = re.search(r"column ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", str(exc))
        try:
            column = ast.literal_eval(named.group(1)) if named else None
        except (ValueError, SyntaxError):
            column = None
        if column is None or not _may_take_text(clf, column):
            raise
        raise DataError(
            f"{exc}. The model's ColumnTransformer may take text in that column; this command "
            "reads numbers only: score such a model from Python (clf.predict(frame) a chunk at "
            "a time, or attentive.scale.score_dask on a Dask frame; docs/scale.md)"
        ) from None


# Steps that take numbers only (scikit-learn's scalers, projections and numeric expansions);
# any other step of a ColumnTransformer (an encoder, a FunctionTransformer, one of the user's)
# may take text.
_NUMERIC_MODULES = (
    "sklearn.preprocessing._data",
    "sklearn.preprocessing._polynomial",
    "sklearn.preprocessing._discretization",
    "sklearn.decomposition",
)


def _may_take_text(clf: AttentiveClassifier, column) -> bool:
    """Whether the model's first step, a ColumnTransformer, sends ``column`` to a step that may
    take text, or drops it."""
    ct = _leading_column_transformer(clf.estimator_)
    if ct is None:
        return False
    names = [str(n) for n in getattr(ct, "feature_names_in_", ())]
    if str(column) not in names:
        return False
    at = names.index(str(column))
    for _, step, columns in getattr(ct, "transformers_", ()):
        if at in _positions(columns, names):
            return _step_takes_text(step)
    return True  # (not sent anywhere: dropped)


def _positions(columns, names: list[str]) -> set[int]:
    if isinstance(columns, slice):
        return set(range(len(names))[columns])
    values = list(np.atleast_1d(columns))
    if values and isinstance(values[0], bool | np.bool_):
        return {i for i, keep in enumerate(values) if keep}
    return {
        names.index(str(c)) if isinstance(c, str) else int(c)
        for c in values
        if str(c) in names or not isinstance(c, str)
    }


def _step_takes_text(step) -> bool:
    if isinstance(step, str):
        return step == "drop"  # (passthrough: the model takes it, as a number)
    while isinstance(step, Pipeline):
        kept = [s for _, s in step.steps if s not in (None, "passthrough")]
        if not kept:
            return False
        step = kept[0]
    if isinstance(step, FunctionTransformer) and step.func is None:
        return False  # ("passthrough", as a fitted ColumnTransformer holds it)
    return not type(step).__module__.startswith(_NUMERIC_MODULES)
