"""Retrying chunk writes on transient I/O errors, and the fault-injection test hooks.

:func:`retry_io` runs a write, retrying an ``OSError`` a few times with a growing pause
unless the error is one that waiting does not fix (read-only or full filesystem, no
permission, name too long); those, and the last failed attempt, are raised.

Test hooks (environment variables, read on the worker that runs the chunk task):

``KINEFIT_FAULT_CHUNKS``
    Chunk indices (``"2"`` or ``"1,3"``) whose tasks raise :class:`InjectedFault` before
    doing any work. With ``KINEFIT_FAULT_DIR`` set, each fails only once (a file in that
    directory remembers the failure), which simulates a fit interrupted part way.
``KINEFIT_FAULT_IO``
    Injected ``OSError`` while writing a chunk, after its data and before its done
    marker: comma-separated ``chunk[:times[:ERRNO]]`` entries. ``"2"`` fails every write
    attempt of chunk 2 with ``EIO``; ``"2:1"`` fails its first attempt only (a
    transient error that the retry absorbs); ``"0:*:ENOSPC"`` fails every attempt of
    chunk 0 with a full disk.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

FAULT_CHUNKS_ENV = "KINEFIT_FAULT_CHUNKS"
FAULT_DIR_ENV = "KINEFIT_FAULT_DIR"
FAULT_IO_ENV = "KINEFIT_FAULT_IO"
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


class InjectedFault(RuntimeError):
    """Raised by the ``KINEFIT_FAULT_CHUNKS`` test hook."""


def chunk_fault(k: int) -> None:
    """``KINEFIT_FAULT_CHUNKS`` hook: fail chunk ``k``'s task if it is listed."""
    chunks = os.environ.get(FAULT_CHUNKS_ENV, "")
    if str(k) not in [c.strip() for c in chunks.split(",")]:
        return
    folder = os.environ.get(FAULT_DIR_ENV)
    if folder:
        try:
            os.close(os.open(Path(folder) / f"chunk-{k}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    raise InjectedFault(f"injected failure of chunk {k} ({FAULT_CHUNKS_ENV}={chunks})")


def io_fault(k: int, attempt: int) -> None:
    """``KINEFIT_FAULT_IO`` hook: raise ``OSError`` on write attempt ``attempt`` of chunk ``k``."""
    spec = os.environ.get(FAULT_IO_ENV, "")
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        parts = entry.split(":")
        chunk, times, name = (parts + ["*", "EIO"][len(parts) - 1 :])[:3]
        if chunk != str(k) or (times != "*" and attempt >= int(times)):
            continue
        code = getattr(errno, name)
        raise OSError(code, f"{os.strerror(code)} (injected by {FAULT_IO_ENV}={spec})")


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
