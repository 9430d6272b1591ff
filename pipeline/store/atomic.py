"""Stores that appear under their final name only when complete.

A store is built under a temporary name beside its final path (same directory, so the
final ``rename`` is atomic on one filesystem) and swapped in at the end. An existing store
at the final path is replaced only after the new one is complete, and removed last.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def partial_path(path: str | Path, tag: str = "partial") -> Path:
    """Deterministic temporary name beside ``path``: ``<dir>/.<name>.<tag>``."""
    path = Path(path)
    return path.with_name(f".{path.name}.{tag}")


def remove_store(path: str | Path) -> None:
    """Delete a store directory (or file) if it exists."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def publish(tmp: str | Path, final: str | Path) -> Path:
    """Move the complete store ``tmp`` to ``final``, replacing any store there.

    The old store is first renamed aside, the new one renamed in, then the old one
    deleted; at every moment ``final`` is either the old complete store or the new one
    (except for the instant between the two renames).
    """
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


@contextmanager
def building(final: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``final``; publish it when the block succeeds.

    On an exception the temporary store is deleted and ``final`` is left untouched.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_path(final, f"tmp-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
    except BaseException:
        remove_store(tmp)
        raise
    publish(tmp, final)
