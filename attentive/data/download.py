"""Download a file once into the cache, verified, with pooch.

Each remote file has a list of mirrors and, when one is published, an md5 sum. pooch downloads to a
temporary file next to the target and moves it into place only after the checksum matched, so a
failed, truncated or corrupt download leaves nothing in the cache that looks valid. Files without a
published checksum (the LIBSVM datasets) are verified by the caller, which parses them, checks the
shape and calls :func:`discard` when it is wrong.

The environment variable ``ATTENTIVE_MIRROR`` (or the ``base_url`` argument) replaces every mirror
by one base URL serving the files under their own names; the tests point it at a loopback server.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import pooch

from attentive.errors import DataError, DownloadError

__all__ = ["RemoteFile", "discard", "fetch", "manual_instructions"]

TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class RemoteFile:
    """A file to download: its name, the folder it goes to in the cache, mirrors and checksum.

    Parameters
    ----------
    filename : str
        Name of the file on the server and in the cache.
    subdir : str
        Folder under the data home (``"mnist"``, ``"libsvm"``).
    mirrors : tuple of str
        Base URLs tried in order; the file's URL is ``mirror + filename``.
    md5 : str or None
        Published md5 sum, or ``None`` when none exists (the caller then verifies the shape).
    """

    filename: str
    subdir: str
    mirrors: tuple[str, ...]
    md5: str | None = None

    def path(self, home: Path) -> Path:
        """Where the file lives in the cache under ``home``."""
        return home / self.subdir / self.filename

    def urls(self, base_url: str | None = None) -> list[str]:
        """The URLs to try, honouring ``base_url`` and then ``ATTENTIVE_MIRROR``."""
        override = base_url or os.environ.get("ATTENTIVE_MIRROR")
        bases = [override] if override else list(self.mirrors)
        return [b.rstrip("/") + "/" + self.filename for b in bases]


def manual_instructions(remote: RemoteFile, home: Path) -> str:
    """How to place ``remote`` in the cache by hand (used in every download error)."""
    check = f" (md5 {remote.md5})" if remote.md5 else ""
    return (
        f"to install it by hand, download {remote.mirrors[0]}{remote.filename}{check} and save it "
        f"as {remote.path(home)}"
    )


def is_cached(remote: RemoteFile, home: Path) -> bool:
    """Whether the file is present in the cache (its checksum is verified when it is read)."""
    return remote.path(home).is_file()


def fetch(
    remote: RemoteFile,
    home: Path,
    *,
    download: bool = True,
    base_url: str | None = None,
    progress: bool = False,
) -> Path:
    """Return the cached path of ``remote``, downloading it first if needed.

    Parameters
    ----------
    remote : RemoteFile
        The file.
    home : pathlib.Path
        The data home; the file goes to ``home / remote.subdir / remote.filename``.
    download : bool
        When ``False`` a missing file raises :class:`DataError` instead of being downloaded.
    base_url : str, optional
        Replaces the mirrors (see the module docstring).
    progress : bool
        Show a tqdm progress bar (the CLI does; the library and the app do not).

    Returns
    -------
    pathlib.Path
        Path of the verified file.

    Raises
    ------
    DataError
        The file is missing and ``download`` is false.
    DownloadError
        Every mirror failed or served a file with the wrong checksum; the message names the file,
        each URL tried with its error, and how to place the file by hand.
    """
    target = remote.path(home)
    known_hash = f"md5:{remote.md5}" if remote.md5 else None
    if target.is_file() and (
        remote.md5 is None or pooch.file_hash(str(target), "md5") == remote.md5
    ):
        return target
    if not download:
        state = "has the wrong checksum" if target.is_file() else "is not in the cache"
        raise DataError(
            f"{remote.filename} {state} ({target}) and downloads are off (--no-download, "
            "download=False); run `python -m attentive datasets download`, drop --no-download "
            f"(download=True), or {manual_instructions(remote, home)}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    logger = pooch.get_logger()
    level = logger.level
    if not progress:
        logger.setLevel(logging.WARNING)
    failures = []
    try:
        for url in remote.urls(base_url):
            downloader = pooch.HTTPDownloader(progressbar=progress, timeout=TIMEOUT_SECONDS)
            try:
                path = pooch.retrieve(
                    url,
                    known_hash=known_hash,
                    fname=remote.filename,
                    path=target.parent,
                    downloader=downloader,
                )
                return Path(path)
            except Exception as exc:  # any network, HTTP or checksum failure: try the next mirror
                failures.append(f"  {url}: {_describe(exc)}")
                discard(target)
    finally:
        logger.setLevel(level)
    with contextlib.suppress(OSError):
        target.parent.rmdir()  # only if the failed download left it empty
    raise DownloadError(
        f"could not download {remote.filename}; tried:\n" + "\n".join(failures) + "\n"
        f"Nothing was kept in the cache; {manual_instructions(remote, home)}"
    )


def discard(path: Path) -> None:
    """Delete a cached file that failed verification, so it never looks valid again."""
    path.unlink(missing_ok=True)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, ValueError) and "hash" in str(exc).lower():
        return "checksum mismatch (the file is corrupt or truncated) - " + " ".join(text)[:300]
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:300]}"
