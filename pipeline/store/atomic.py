"""Stores that appear under their final name only when complete.

A store is built under a temporary name beside its final path (same directory, so the
final ``rename`` is atomic on one filesystem) and swapped in at the end. An existing store
at the final path is replaced only after the new one is complete, and removed last.

:func:`retry_io` runs a write, retrying an ``OSError`` a few times with a growing pause
unless the error is one that waiting does not fix (read-only or full filesystem, no
permission, name too long); those, and the last failed attempt, are raised.

Plain files (exports, plans, reports, videos) go through :func:`atomic_files` (or
:func:`atomic_file`, :func:`write_text_atomic`): the one place that writes a temporary
file beside its destination and renames it in; the layout test forbids other such code.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import zarr

from pipeline.errors import OutputError


def partial_path(path: str | Path, tag: str = "partial") -> Path:
    """Deterministic temporary name beside ``path``: ``<dir>/.<name>.<tag>``."""
    path = Path(path)
    return path.with_name(f".{path.name}.{tag}")


#: Attempts to delete a store that writers still add chunks to (a failed dask compute
#: raises while its other threads finish the chunks in flight).
REMOVE_ATTEMPTS = 6


def remove_store(path: str | Path) -> None:
    """Delete a store directory (or file) if it exists.

    A directory that fills while it is deleted (``ENOTEMPTY``: chunk writes of a failed
    compute still landing, which also recreate their folders) is deleted again, after
    0.05, 0.1, ... 1.6 s, until it stays gone (an OSError if it never does).
    """
    path = Path(path)
    if not (path.is_dir() and not path.is_symlink()):
        if path.exists() or path.is_symlink():
            path.unlink()
        return
    for attempt in range(REMOVE_ATTEMPTS):
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
        else:
            if attempt == 0:  # nothing was writing into it
                return
        time.sleep(0.05 * 2**attempt)  # writers still busy: let them land, then look again
        if not path.exists():
            return
    waited = sum(0.05 * 2**n for n in range(REMOVE_ATTEMPTS))
    raise OSError(errno.ENOTEMPTY, f"still being written after {waited:.2g} s", str(path))


def consolidate(path: str | Path) -> None:
    """Write the zarr store's consolidated metadata (once it will not change any more).

    ``xarray.open_zarr(path)`` (what users type) reads it, and warns on a store without
    it. zarr 3.1 warns that consolidated metadata is not in the v3 spec yet: silenced here,
    in kinefit's writer, not in the user's session.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        zarr.consolidate_metadata(str(path), zarr_format=3)


def publish(tmp: str | Path, final: str | Path) -> Path:
    """Move the complete store ``tmp`` to ``final``, replacing any store there.

    Its consolidated metadata is written first (:func:`consolidate`). The old store is
    first renamed aside, the new one renamed in, then the old one deleted; at every moment
    ``final`` is either the old complete store or the new one (except for the instant
    between the two renames).
    """
    consolidate(tmp)
    tmp, final = Path(tmp), Path(final)
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)
        raise
    if old is not None:
        remove_store(old)
    return final


def check_writable(folder: str | Path, what: str) -> Path:
    """Make sure ``what`` can be written in ``folder`` (created if missing), before any work.

    A probe file is created and removed again. Raises
    :class:`~pipeline.errors.OutputError` naming the folder, e.g. ``cannot write the report
    in ro_out: Read-only file system; anything already stored there is unchanged``.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".kinefit-probe-{uuid.uuid4().hex[:8]}"
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        probe.unlink()
    except OSError as exc:
        raise OutputError(
            f"cannot write {what} in {folder}: {exc.strerror or exc}; anything already "
            "stored there is unchanged"
        ) from exc
    return folder


def temp_path(path: str | Path) -> Path:
    """A fresh temporary name beside ``path`` that keeps its suffix.

    ``<dir>/.<stem>.<pid>-<random>.tmp<suffix>``: hidden, unique per process and call, and
    with the destination's suffix so that writers choosing a format by suffix (PyAV,
    pandas) see the right one.
    """
    path = Path(path)
    return path.with_name(f".{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp{path.suffix}")


@contextmanager
def atomic_files(*paths: str | Path) -> Iterator[tuple[Path, ...]]:
    """Write several files all together or not at all.

    Yields one temporary path beside each destination (:func:`temp_path`). When the block
    succeeds every temporary file is renamed onto its destination (an existing file is
    replaced only then); on an exception none is, and every temporary file is removed. Files
    are created by the writer with the user's umask, like every other output.

    Parameters
    ----------
    *paths
        Destinations; their folders are created if missing.

    Yields
    ------
    tuple of Path
        The temporary paths, in the order of ``paths``.

    Raises
    ------
    OutputError
        A destination is a folder.
    """
    finals = [Path(p) for p in paths]
    folders = [p for p in finals if p.is_dir()]
    if folders:  # checked before anything is written: os.replace would fail at the end
        raise OutputError(f"{folders[0]}: is a folder; give the path of the file to write")
    for folder in dict.fromkeys(p.parent for p in finals):
        folder.mkdir(parents=True, exist_ok=True)
    temps = tuple(temp_path(p) for p in finals)
    try:
        yield temps
        for tmp, final in zip(temps, finals, strict=True):
            os.replace(tmp, final)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)


@contextmanager
def atomic_file(path: str | Path) -> Iterator[Path]:
    """Write one file all or nothing: :func:`atomic_files` for a single destination."""
    with atomic_files(path) as (tmp,):
        yield tmp


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ending in a newline) to ``path``: all of it or nothing."""
    if not text.endswith("\n"):
        text += "\n"
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


@contextmanager
def building(final: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``final``; publish it when the block succeeds.

    On an exception the temporary store is deleted (:func:`remove_store`) and ``final`` is
    left untouched; the exception raised is the block's own, even when the deletion fails
    too (that failure is added as a note). A folder that cannot be written fails first,
    naming it (:func:`check_writable`).
    """
    final = Path(final)
    check_writable(final.parent, final.name)
    tmp = partial_path(final, f"tmp-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
    except BaseException as exc:  # the write's own error is the one raised, never the cleanup's
        try:
            remove_store(tmp)
        except OSError as cleanup:
            exc.add_note(f"kinefit: the temporary store {tmp} could not be removed: {cleanup}")
        raise
    publish(tmp, final)


#: Attempts of one chunk write, and the pause before retry ``n`` (``BACKOFF_S * 4**n``).
WRITE_ATTEMPTS = 3
BACKOFF_S = 0.2
#: OSError numbers that a retry does not fix: raised at once.
PERMANENT_ERRNOS = frozenset(
    {
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ENAMETOOLONG,
        errno.ENOTDIR,
        errno.EISDIR,
    }
)

T = TypeVar("T")


def retry_io(write: Callable[[int], T], what: str) -> T:
    """Call ``write(attempt)``, retrying transient ``OSError`` up to :data:`WRITE_ATTEMPTS`.

    Parameters
    ----------
    write : callable
        Gets the attempt number (0, 1, ...); must be idempotent.
    what : str
        Named in the error of the last attempt.

    Raises
    ------
    OSError
        A permanent error (:data:`PERMANENT_ERRNOS`) at once, or the last attempt's
        error, its message prefixed with ``what`` and the number of attempts.
    """
    for attempt in range(WRITE_ATTEMPTS):
        try:
            return write(attempt)
        except OSError as exc:
            if exc.errno in PERMANENT_ERRNOS or attempt + 1 == WRITE_ATTEMPTS:
                text = f"{what}: {exc.strerror or exc} (after {attempt + 1} attempt(s))"
                if exc.errno is None:
                    raise OSError(text) from exc
                raise OSError(exc.errno, text) from exc
            time.sleep(BACKOFF_S * 4**attempt)
    raise AssertionError("unreachable")  # pragma: no cover
