"""Score files: read LIBSVM, CSV or Parquet lazily in row chunks; write Parquet atomically.

:func:`score_file` is what ``python -m attentive score`` runs: :func:`read_input` builds the lazy
chunks, :func:`~attentive.scale.evaluate.score_dask` evaluates them, and :func:`write_scores` writes
one Parquet part per chunk into a temporary directory next to the output, renamed to the output
only when every chunk is written. A chunk whose worker dies is recomputed by Dask; a run that fails
leaves no directory under the output's name.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from attentive.errors import DataError, InvalidParameterError
from attentive.estimator import AttentiveClassifier
from attentive.models.persistence import load_model
from attentive.scale.evaluate import score_dask

__all__ = [
    "FORMATS",
    "ScoreSummary",
    "load_classifier",
    "local_cluster",
    "read_input",
    "score_file",
    "write_scores",
]

FORMATS = ("libsvm", "csv", "parquet")
_SUFFIXES = {
    ".libsvm": "libsvm",
    ".svm": "libsvm",
    ".svmlight": "libsvm",
    ".t": "libsvm",
    ".txt": "libsvm",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_SCAN_BYTES = 16 * 1024 * 1024
SUMMARY_NAME = "_summary.json"  # Parquet readers skip names starting with "_"


# -- the model ------------------------------------------------------------------------------------
def load_classifier(path: str | os.PathLike) -> AttentiveClassifier:
    """Load an exported :class:`~attentive.AttentiveClassifier` (a skops file) safely, with
    :func:`attentive.models.load_model` (pickles and untrusted types refused, the wrapped model
    checked), and check that it is one."""
    model = load_model(path)
    if not isinstance(model, AttentiveClassifier):
        raise InvalidParameterError(
            f"{Path(path).name} holds a {type(model).__name__}, not an AttentiveClassifier; export "
            "one from the dashboard, or fit AttentiveClassifier(model).fit(X_ref, y_ref) and save "
            "it with skops."
        )
    return model


# -- reading --------------------------------------------------------------------------------------
def input_format(path: str | os.PathLike, format: str | None = None) -> str:
    """``format`` if given, else guessed from the name (a directory is a Parquet dataset)."""
    path = Path(path)
    if format is not None:
        if format not in FORMATS:
            raise InvalidParameterError(f"format must be one of {FORMATS}, got {format!r}.")
        return format
    if path.is_dir():
        return "parquet"
    guessed = _SUFFIXES.get(path.suffix.lower())
    if guessed is None:
        raise InvalidParameterError(
            f"cannot tell the format of {path.name} from its name; pass --format "
            f"({', '.join(FORMATS)})."
        )
    return guessed


def line_chunks(path: Path, chunk_rows: int, skip_lines: int = 0) -> list[tuple[int, int]]:
    """Byte ranges ``[start, stop)`` of ``chunk_rows`` lines each (the last may be shorter).

    One sequential pass counting newlines, 16 MiB at a time: memory stays flat in the file size.
    """
    bounds = []
    start = 0
    lines_in_chunk = -skip_lines
    offset = 0
    with open(path, "rb") as f:
        while piece := f.read(_SCAN_BYTES):
            newlines = piece.count(b"\n")
            if lines_in_chunk + newlines < chunk_rows:
                lines_in_chunk += newlines
            else:
                ends = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == 10) + offset + 1
                for end in ends:
                    lines_in_chunk += 1
                    if lines_in_chunk == 0:
                        start = int(end)  # past the skipped lines (a CSV header)
                    elif lines_in_chunk == chunk_rows:
                        bounds.append((start, int(end)))
                        start, lines_in_chunk = int(end), 0
            offset += len(piece)
    if offset > start:
        bounds.append((start, offset))
    return bounds


def _read_range(path: str, start: int, stop: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(stop - start)


def _libsvm_chunk(path: str, start: int, stop: int, n_features: int, zero_based: bool):
    data = _read_range(path, start, stop)
    try:
        X, _ = load_svmlight_file(
            io.BytesIO(data), n_features=n_features, dtype=np.float64, zero_based=zero_based
        )
    except ValueError as exc:
        raise DataError(f"{Path(path).name}, bytes {start}-{stop}: {exc}") from None
    return X.tocsr()


def _csv_chunk(path: str, start: int, stop: int, names: list[str], columns: list[str]):
    frame = pd.read_csv(io.BytesIO(_read_range(path, start, stop)), header=None, names=names)
    return frame[columns].astype(np.float64)


def _parquet_chunk(file: str, row_groups: list[int], columns: list[str]) -> pd.DataFrame:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(file).read_row_groups(row_groups, columns=columns)
    return table.to_pandas().astype(np.float64)


def _feature_columns(available: list[str], clf: AttentiveClassifier, exclude) -> list[str]:
    names = getattr(clf, "feature_names_in_", None)
    if names is not None:
        missing = [c for c in names if c not in available]
        if missing:
            raise DataError(
                f"the input lacks {len(missing)} of the model's features: {missing[:10]}"
            )
        return list(names)
    columns = [c for c in available if c not in set(exclude)]
    if len(columns) != clf.n_features_in_:
        raise DataError(
            f"the input has {len(columns)} feature columns ({len(available)} minus "
            f"{len(available) - len(columns)} excluded) but the model expects "
            f"{clf.n_features_in_}; name the other columns with --exclude"
        )
    return columns


def read_input(
    path: str | os.PathLike,
    clf: AttentiveClassifier,
    *,
    chunk_rows: int = 100_000,
    format: str | None = None,
    zero_based: bool = False,
    exclude: tuple[str, ...] = (),
):
    """The rows of a file as lazy chunks of about ``chunk_rows`` rows, for :func:`score_dask`.

    Parameters
    ----------
    path : path-like
        LIBSVM/svmlight text (one example per line; labels are ignored), CSV with a header line
        (one numeric column per feature, no quoted line breaks) or Parquet (a file or a
        directory of files).
    clf : AttentiveClassifier
        The model to feed: its number of features (LIBSVM) or feature names / count (CSV,
        Parquet) decide what is read.
    chunk_rows : int
        Rows per chunk: exact for text files; for Parquet, whole row groups are gathered until a
        chunk holds at least ``chunk_rows`` rows.
    format : {"libsvm", "csv", "parquet"}, optional
        Guessed from the name when None.
    zero_based : bool, default=False
        LIBSVM feature indices start at 0 (else at 1, LIBSVM's convention). Fixed for the whole
        file: scikit-learn's per-file guess would differ from chunk to chunk.
    exclude : tuple of str
        CSV / Parquet columns that are not features (e.g. a label), for a model fitted without
        feature names.

    Returns
    -------
    dask.array.Array (LIBSVM: CSR blocks) or dask.dataframe.DataFrame (CSV, Parquet)
    """
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise InvalidParameterError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
    path = Path(path)
    if not path.exists():
        raise DataError(f"input not found: {path}")
    fmt = input_format(path, format)
    n = clf.n_features_in_
    if fmt == "libsvm":
        blocks = [
            da.from_delayed(
                dask.delayed(_libsvm_chunk, pure=True)(str(path), a, b, n, zero_based),
                shape=(np.nan, n),
                dtype=np.float64,
                meta=sp.csr_matrix((0, n)),
            )
            for a, b in line_chunks(path, chunk_rows)
        ]
        if not blocks:
            raise DataError(f"{path.name} is empty")
        return da.concatenate(blocks, axis=0, allow_unknown_chunksizes=True)
    if fmt == "csv":
        with open(path, newline="") as f:
            header = pd.read_csv(f, nrows=0).columns.tolist()
        columns = _feature_columns(header, clf, exclude)
        meta = pd.DataFrame({c: np.empty(0) for c in columns})
        parts = [
            dask.delayed(_csv_chunk, pure=True)(str(path), a, b, header, columns)
            for a, b in line_chunks(path, chunk_rows, skip_lines=1)
        ]
        if not parts:
            raise DataError(f"{path.name} has no rows")
        return dd.from_delayed(parts, meta=meta)
    return _read_parquet(path, clf, chunk_rows, exclude)


def _read_parquet(path: Path, clf, chunk_rows: int, exclude):
    import pyarrow.parquet as pq

    files = (
        sorted(p for p in path.rglob("*.parquet") if not p.name.startswith(("_", ".")))
        if (path.is_dir())
        else [path]
    )
    if not files:
        raise DataError(f"no Parquet files in {path}")
    columns = _feature_columns(pq.ParquetFile(files[0]).schema_arrow.names, clf, exclude)
    meta = pd.DataFrame({c: np.empty(0) for c in columns})
    parts = []
    for file in files:
        meta_data = pq.ParquetFile(file).metadata
        group, rows = [], 0
        for i in range(meta_data.num_row_groups):
            group.append(i)
            rows += meta_data.row_group(i).num_rows
            if rows >= chunk_rows:
                parts.append(dask.delayed(_parquet_chunk, pure=True)(str(file), group, columns))
                group, rows = [], 0
        if group:
            parts.append(dask.delayed(_parquet_chunk, pure=True)(str(file), group, columns))
    return dd.from_delayed(parts, meta=meta)


# -- writing --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did.

    Attributes
    ----------
    rows : int
    chunks : int
    n_terms : int
    mean_evaluated_fraction : float
        Mean over rows of terms evaluated / ``n_terms``.
    stopped_lower, stopped_upper, not_stopped : int
        Rows stopped on each side of the boundary, and rows evaluated to the end.
    positive : int
        Rows predicted positive.
    seconds : float
        Wall-clock time of the run.
    output : str
    """

    rows: int
    chunks: int
    n_terms: int
    mean_evaluated_fraction: float
    stopped_lower: int
    stopped_upper: int
    not_stopped: int
    positive: int
    seconds: float
    output: str

    def text(self) -> str:
        rate = self.rows / self.seconds if self.seconds > 0 else float("nan")
        return (
            f"{self.rows:,} rows in {self.chunks} chunks, {self.seconds:.1f} s ({rate:,.0f} rows/s)\n"
            f"mean evaluated fraction {self.mean_evaluated_fraction:.4f} of {self.n_terms} terms\n"
            f"stopped: {self.stopped_lower:,} lower, {self.stopped_upper:,} upper; "
            f"{self.not_stopped:,} evaluated to the end; {self.positive:,} positive\n"
            f"written to {self.output}"
        )


def _write_part(frame: pd.DataFrame, path: str) -> dict[str, int]:
    """Write one chunk's scores to ``path`` (via a unique temporary name) and count its outcomes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A hidden name: a worker killed mid-write leaves a file that Parquet readers of the
    # directory skip (they ignore names starting with "." or "_"); the run removes it at the end.
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
    os.replace(tmp, path)
    stopped = frame["stopped"].to_numpy()
    side = frame["stop_side"].to_numpy()
    return {
        "rows": len(frame),
        "evaluated": int(frame["n_evaluated"].sum()),
        "stopped_lower": int((stopped & (side < 0)).sum()),
        "stopped_upper": int((stopped & (side > 0)).sum()),
        "positive": int(frame["positive"].sum()),
    }


def write_scores(
    scores: dd.DataFrame,
    output: str | os.PathLike,
    *,
    n_terms: int,
    client=None,
    retries: int = 3,
    progress: bool | None = None,
    overwrite: bool = False,
    started: float | None = None,
) -> ScoreSummary:
    """Compute ``scores`` and write them as a Parquet directory, one part per chunk, atomically.

    Parts ``part-000000.parquet``, ... (in row order, without the index) and ``_summary.json`` go
    to a temporary directory beside ``output``, which is renamed to ``output`` once every part is
    written; on failure it is removed. A part is itself written under a temporary name and
    renamed, so a retried chunk never leaves a half-written part.

    Parameters
    ----------
    scores : dask.dataframe.DataFrame
        From :func:`~attentive.scale.evaluate.score_dask`.
    output : path-like
        The directory to create.
    n_terms : int
        The classifier's number of terms (for the evaluated fraction).
    client : distributed.Client, optional
        Default: the current client (``distributed.get_client``).
    retries : int
        Times Dask retries a chunk that raised (a chunk lost with its worker is recomputed anyway).
    progress : bool, optional
        Show a progress bar of chunks written; default: when stderr is a terminal.
    overwrite : bool
        Replace an existing ``output``; otherwise an existing one is an error.
    started : float, optional
        ``time.perf_counter()`` when the run began (the summary's wall-clock); default: now.
    """
    from distributed import as_completed, get_client
    from tqdm.auto import tqdm

    started = time.perf_counter() if started is None else started
    output = Path(output)
    if output.exists() and not overwrite:
        raise InvalidParameterError(f"{output} exists; pass overwrite=True (--overwrite).")
    output.parent.mkdir(parents=True, exist_ok=True)
    client = client or get_client()
    tmp = output.with_name(f".{output.name}.{uuid.uuid4().hex}.tmp")
    tmp.mkdir()
    futures = []
    try:
        parts = scores.to_delayed()
        tasks = [
            dask.delayed(_write_part, pure=True)(part, str(tmp / f"part-{i:06d}.parquet"))
            for i, part in enumerate(parts)
        ]
        futures = client.compute(tasks, retries=retries)
        disable = None if progress is None else not progress  # None: only on a terminal
        bar = tqdm(total=len(futures), unit="chunk", desc="scoring", disable=disable)
        with bar:
            for _ in as_completed(futures):
                bar.update()
        counts = client.gather(futures)
        rows = sum(c["rows"] for c in counts)
        lower = sum(c["stopped_lower"] for c in counts)
        upper = sum(c["stopped_upper"] for c in counts)
        evaluated = sum(c["evaluated"] for c in counts)
        summary = ScoreSummary(
            rows=rows,
            chunks=len(counts),
            n_terms=n_terms,
            mean_evaluated_fraction=evaluated / (rows * n_terms) if rows and n_terms else 0.0,
            stopped_lower=lower,
            stopped_upper=upper,
            not_stopped=rows - lower - upper,
            positive=sum(c["positive"] for c in counts),
            seconds=time.perf_counter() - started,
            output=str(output),
        )
        for leftover in tmp.glob(".*.tmp"):  # parts a killed worker was writing (then redone)
            leftover.unlink(missing_ok=True)
        (tmp / SUMMARY_NAME).write_text(json.dumps(asdict(summary), indent=2) + "\n")
        if output.exists():
            old = output.with_name(f".{output.name}.{uuid.uuid4().hex}.old")
            os.replace(output, old)
            os.replace(tmp, output)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, output)
    except BaseException:
        client.cancel(futures)  # chunks still running would write into a removed directory
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


# -- the whole run --------------------------------------------------------------------------------
def local_cluster(n_workers: int | None = None, **kwargs):
    """A ``distributed.LocalCluster`` on 127.0.0.1 only: one single-threaded worker process per
    core (or ``n_workers``), no dashboard.

    The scheduler still serves its health routes over HTTP on 127.0.0.1 (port 8787, or a free one
    when that is taken: the warning saying so is silenced).
    """
    import warnings

    from distributed import LocalCluster

    kwargs = {
        "n_workers": n_workers or len(os.sched_getaffinity(0)),
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": None,
        **kwargs,
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Port .* is already in use", UserWarning)
        return LocalCluster(**kwargs)


def score_file(
    model: str | os.PathLike | AttentiveClassifier,
    input: str | os.PathLike,
    output: str | os.PathLike,
    *,
    scheduler: str | None = None,
    n_workers: int | None = None,
    chunk_rows: int = 100_000,
    format: str | None = None,
    zero_based: bool = False,
    exclude: tuple[str, ...] = (),
    progress: bool | None = None,
    overwrite: bool = False,
) -> ScoreSummary:
    """Score a file with an exported classifier on Dask and write the scores as Parquet.

    ``model`` is a skops file (loaded with :func:`load_classifier`) or a fitted classifier.
    Without ``scheduler`` a :func:`local_cluster` is started for the run and closed after it;
    with one (``tcp://host:port``) that cluster is used. See :func:`read_input` and
    :func:`write_scores` for the other parameters.
    """
    from distributed import Client

    started = time.perf_counter()
    clf = model if isinstance(model, AttentiveClassifier) else load_classifier(model)
    X = read_input(
        input, clf, chunk_rows=chunk_rows, format=format, zero_based=zero_based, exclude=exclude
    )
    scores = score_dask(clf, X)
    cluster = None if scheduler else local_cluster(n_workers)
    try:
        with Client(scheduler or cluster) as client:
            summary = write_scores(
                scores,
                output,
                n_terms=clf.n_terms_,
                client=client,
                progress=progress,
                overwrite=overwrite,
                started=started,
            )
    finally:
        if cluster is not None:
            cluster.close()
    return summary
