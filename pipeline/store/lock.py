"""One run per session at a time: an advisory lock file beside the output store.

:func:`session_lock` takes an exclusive ``flock`` on ``<dir>/.<name>.lock`` (beside the
store ``<dir>/<name>``) and writes the owner's PID, host and start time into it, so that
a second run on the same session fails at once with :class:`SessionLockedError` naming
the owner, before it does any work.

A lock left behind by a killed run is never stale: the kernel drops a process's
``flock`` when the process dies, whatever PID is written in the file, so the next run
takes the lock at once (no PID liveness guess, no PID-reuse race). Locks on NFS v4 are
seen by every host. The lock file is unlinked on release while still held; a waiter that
locked the unlinked file notices (its inode is gone from the path) and retries.

On filesystems without ``flock`` (some Lustre mounts) the run proceeds unlocked with a
:class:`LockUnavailableWarning`.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from pipeline.errors import SessionLockedError
from pipeline.store.atomic import partial_path

#: errno values of filesystems that do not implement ``flock``.
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class LockUnavailableWarning(UserWarning):
    """The output filesystem has no ``flock``: concurrent runs are not detected."""


def lock_path(out: str | Path) -> Path:
    """The lock file of the store ``out``: ``<dir>/.<name>.lock``."""
    return partial_path(out, "lock")


def _owner(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on host {info['host']} since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "owner unknown (lock file being written)"


def _acquire(out: Path) -> int | None:
    path = lock_path(out)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _owner(fd)
            os.close(fd)
            raise SessionLockedError(
                f"{out}: another run is fitting this session ({owner}); nothing was done. "
                f"Rerun once it has finished (a run that was killed holds no lock)."
            ) from None
        except OSError as exc:
            os.close(fd)
            if exc.errno not in _NO_FLOCK:
                raise
            warnings.warn(
                f"{path}: the filesystem does not support flock ({exc.strerror}); "
                "concurrent runs on this session are not detected",
                LockUnavailableWarning,
                stacklevel=3,
            )
            return None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous owner unlinked the file after we opened it: retry
    info = {"pid": os.getpid(), "host": socket.gethostname(), "since": _now()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)
    return fd


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@contextmanager
def session_lock(out: str | Path) -> Iterator[None]:
    """Hold the session lock of the store ``out`` for the duration of the block.

    Parameters
    ----------
    out : str or Path
        The output store; its directory must exist.

    Raises
    ------
    SessionLockedError
        Another live process holds the lock (the message names its PID, host and start).
    OSError
        The lock file cannot be created (read-only or full output folder).
    """
    out = Path(out)
    fd = _acquire(out)
    try:
        yield
    finally:
        if fd is not None:
            with suppress(OSError):
                os.unlink(lock_path(out))
            os.close(fd)
