"""Write scores as a Parquet directory that appears only once complete.

:func:`write_scores` writes one Parquet part per chunk into a hidden temporary directory beside
the output and renames it to the output only when every chunk is written. A chunk whose worker
dies is recomputed by Dask; a run that fails, or is interrupted (Ctrl-C), removes the temporary
directory and leaves no directory under the output's name (and an output being replaced stays as
it was). An output location that cannot be written — a missing or read-only directory, a full
disk — is an :class:`~attentive.errors.OutputError` saying which and why.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import dask
import dask.dataframe as dd
import pandas as pd

from attentive.errors import DataError, InvalidParameterError, OutputError

__all__ = [
    "SUMMARY_NAME",
    "ScoreSummary",
    "check_output",
    "is_scores_directory",
    "output_error",
    "replaceable",
    "sigint_ignored",
    "write_scores",
]

SUMMARY_NAME = "_summary.json"  # Parquet readers skip names starting with "_"
_PART = re.compile(r"part-\d{6,}\.parquet")  # write_scores' parts
_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOENT: "its directory does not exist or takes no new entries",
    errno.ENOTDIR: "a part of its path is a file, not a directory",
}


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
    work_fraction : float
        Mean over rows of the work in units of a full evaluation (the ``work`` column): the
        evaluated fraction, or with a sketched rule, the sketch of the score and the exact
        terms walked after it (:attr:`attentive.Evaluation.work_fraction`).
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
    work_fraction: float
    stopped_lower: int
    stopped_upper: int
    not_stopped: int
    positive: int
    seconds: float
    output: str

    def text(self) -> str:
        rate = self.rows / self.seconds if self.seconds > 0 else float("nan")
        return (
            f"{self.rows:,} row{'' if self.rows == 1 else 's'} in {self.chunks} "
            f"chunk{'' if self.chunks == 1 else 's'}, {self.seconds:.1f} s ({rate:,.0f} rows/s)\n"
            f"mean evaluated fraction {self.mean_evaluated_fraction:.4f} of {self.n_terms} terms"
            f"{self._sketched()}\n"
            f"stopped: {self.stopped_lower:,} lower, {self.stopped_upper:,} upper; "
            f"{self.not_stopped:,} evaluated to the end; {self.positive:,} positive\n"
            f"written to {self.output}"
        )

    def _sketched(self) -> str:
        if abs(self.work_fraction - self.mean_evaluated_fraction) <= 1e-9:
            return ""
        return (
            f"; work {self.work_fraction:.4f} of a full evaluation a row (the sketch of the "
            "score, and the exact terms walked after it)"
        )


def output_error(exc: OSError, what: str | os.PathLike) -> OutputError:
    """An :class:`OutputError` for a failed write of ``what``, saying why in words."""
    reason = _REASONS.get(exc.errno, exc.strerror or str(exc))
    space = "free some space or " if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    return OutputError(
        f"cannot write {what}: {reason}. Nothing was written to the output; {space}choose "
        "another --output (output=...)"
    )


def check_output(output: str | os.PathLike, overwrite: bool) -> Path:
    """Check, before any work, that ``output`` can be created: its directory exists or can be
    made and takes a new entry, and ``output`` does not exist unless ``overwrite`` — and then
    only as an earlier run's output or an empty directory (:func:`replaceable`): ``overwrite``
    never removes a file, a link or a directory of anything else, nor the working directory.

    Raises
    ------
    InvalidParameterError
        ``output`` exists and ``overwrite`` is False, or it exists and is not replaceable, or
        it is named ``-`` (a command's name for its standard output: the scores are a
        directory).
    OutputError
        The directory cannot be created or written to.
    """
    output = Path(output)
    if output.name == "-":  # (a command's usual name for its standard output)
        raise InvalidParameterError(
            f"the output {output} would be a directory named '-': the scores are written as a "
            "Parquet directory, not to the standard output; name that directory"
        )
    if not output.name:  # "." or "/": the directory itself, by its name
        output = output.resolve()
    if os.path.lexists(output):
        refused = replaceable(output)
        if refused is not None:
            raise InvalidParameterError(
                f"{output} exists and is {refused}; --overwrite (overwrite=True from Python) "
                f"replaces only an earlier run's output (a directory of part-*.parquet files and "
                f"{SUMMARY_NAME}) or an empty directory. Name a new output, or remove "
                f"{output} yourself."
            )
        here = Path.cwd().resolve()
        if output.resolve() == here or output.resolve() in here.parents:
            raise InvalidParameterError(
                f"{output} is the working directory (or holds it): name a new output"
            )
        if not overwrite:
            raise InvalidParameterError(
                f"{output} exists; pass --overwrite (overwrite=True from Python) to replace it."
            )
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        probe = output.with_name(f".{output.name}.{uuid.uuid4().hex}.probe")
        probe.mkdir()
        probe.rmdir()
    except FileExistsError:
        raise OutputError(f"cannot write {output}: {output.parent} is not a directory") from None
    except OSError as exc:
        raise output_error(exc, output) from None
    return output


def is_scores_directory(path: Path) -> bool:
    """Whether ``path`` is what :func:`write_scores` writes: a directory (not a link) holding
    its ``_summary.json`` and, besides, only ``part-*.parquet`` files (regular files)."""
    if not path.is_dir() or path.is_symlink() or not (path / SUMMARY_NAME).is_file():
        return False
    return all(
        not entry.is_symlink()
        and entry.is_file()
        and (entry.name == SUMMARY_NAME or _PART.fullmatch(entry.name) is not None)
        for entry in path.iterdir()
    )


def replaceable(path: Path) -> str | None:
    """None where ``overwrite`` may replace the existing ``path`` — an earlier run's output
    (:func:`is_scores_directory`) or an empty directory, whose loss loses nothing — else what
    it is instead, for the refusal."""
    if path.is_symlink():
        return "a symbolic link"
    if path.is_dir() and (is_scores_directory(path) or not any(path.iterdir())):
        return None
    return "a directory that no earlier run wrote" if path.is_dir() else "a file"


def _write_part(frame: pd.DataFrame, path: str) -> dict[str, float]:
    """Write one chunk's scores to ``path`` (via a unique temporary name) and count its outcomes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A hidden name: a worker killed mid-write leaves a file that Parquet readers of the
    # directory skip (they ignore names starting with "." or "_"); the run removes it at the end.
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise output_error(exc, path) from None
    stopped = frame["stopped"].to_numpy()
    side = frame["stop_side"].to_numpy()
    return {
        "rows": len(frame),
        "evaluated": int(frame["n_evaluated"].sum()),
        "work": float(frame["work"].sum()),
        "stopped_lower": int((stopped & (side < 0)).sum()),
        "stopped_upper": int((stopped & (side > 0)).sum()),
        "positive": int(frame["positive"].sum()),
    }


def _remove(directory: Path, seconds: float = 10.0) -> None:
    """Remove a temporary directory, again while a cancelled task that was already running
    still adds a part to it (its write then fails: the directory is gone)."""
    deadline = time.monotonic() + seconds
    while directory.exists():
        shutil.rmtree(directory, ignore_errors=True)
        if not directory.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.05)


@contextlib.contextmanager
def sigint_ignored():
    """Ignore Ctrl-C (SIGINT) in the block; only the main thread receives signals, so elsewhere
    this does nothing. Child processes started in the block keep ignoring it (an ignored signal
    stays ignored across exec)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
    source: str = "the input",
) -> ScoreSummary:
    """Compute ``scores`` and write them as a Parquet directory, one part per chunk, atomically.

    Parts ``part-000000.parquet``, ... (in row order, without the index) and ``_summary.json`` go
    to a temporary directory beside ``output``, which is renamed to ``output`` once every part is
    written; on failure or interruption it is removed. A part is itself written under a
    temporary name and renamed, so a retried chunk never leaves a half-written part.

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
        Replace an existing ``output`` that an earlier run wrote (or an empty directory:
        :func:`check_output`); otherwise an existing one is an error.
    started : float, optional
        ``time.perf_counter()`` when the run began (the summary's wall-clock); default: now.

    Raises
    ------
    DataError
        No rows at all (nothing is written).
    OutputError
        The output's directory cannot be written, or the disk fills up.
    """
    from distributed import as_completed, get_client
    from tqdm.auto import tqdm

    started = time.perf_counter() if started is None else started
    output = check_output(output, overwrite)
    client = client or get_client()
    tmp = output.with_name(f".{output.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.mkdir()
    except OSError as exc:
        raise output_error(exc, output) from None
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
        summary = _summary(counts, n_terms, started, output)
        if summary.rows == 0:
            # (A LIBSVM file of comments and blank lines only is found empty here, not before.)
            raise DataError(f"{source} has no rows to score; nothing was written")
    except BaseException:
        client.cancel(futures)  # chunks still running would write into a removed directory
        _remove(tmp)
        raise
    # The run is complete: a Ctrl-C while the output is put in place would only cut the rename.
    with sigint_ignored():
        try:
            for leftover in tmp.glob(".*.tmp"):  # parts a killed worker was writing (then redone)
                leftover.unlink(missing_ok=True)
            (tmp / SUMMARY_NAME).write_text(json.dumps(asdict(summary), indent=2) + "\n")
            _put_in_place(tmp, output, overwrite)
        except OSError as exc:
            _remove(tmp)
            raise output_error(exc, output) from None
        except BaseException:
            _remove(tmp)
            raise
    return summary


def _summary(counts: list[dict[str, float]], n_terms: int, started: float, output) -> ScoreSummary:
    rows = sum(c["rows"] for c in counts)
    lower = sum(c["stopped_lower"] for c in counts)
    upper = sum(c["stopped_upper"] for c in counts)
    evaluated = sum(c["evaluated"] for c in counts)
    return ScoreSummary(
        rows=rows,
        chunks=len(counts),
        n_terms=n_terms,
        mean_evaluated_fraction=evaluated / (rows * n_terms) if rows and n_terms else 0.0,
        work_fraction=sum(c["work"] for c in counts) / rows if rows else 0.0,
        stopped_lower=lower,
        stopped_upper=upper,
        not_stopped=rows - lower - upper,
        positive=sum(c["positive"] for c in counts),
        seconds=time.perf_counter() - started,
        output=str(output),
    )


def _put_in_place(tmp: Path, output: Path, overwrite: bool) -> None:
    """Rename ``tmp`` to ``output``; an existing ``output`` is moved aside first and removed
    after, or put back if the rename fails. What exists there now is checked again (it may
    have come during the run): unless ``overwrite`` allows it and it is :func:`replaceable`, it
    is put back and the run refused."""
    if not os.path.lexists(output):
        os.replace(tmp, output)  # (a directory that came meanwhile is replaced only if empty)
        return
    old = output.with_name(f".{output.name}.{uuid.uuid4().hex}.old")
    os.replace(output, old)
    refused = replaceable(old)
    if refused is not None or not overwrite:
        os.replace(old, output)
        what = "" if refused is None else f" and is {refused}"
        raise InvalidParameterError(
            f"{output} appeared while the scores were computed{what}; it was left as it is "
            "and nothing was written. Name a new output."
        )
    try:
        os.replace(tmp, output)
    except BaseException:
        os.replace(old, output)
        raise
    if old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)
