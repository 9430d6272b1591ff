"""Hashing: canonical JSON and the digests of text, files and folders.

The only module of kinefit that imports :mod:`hashlib`: every fingerprint, content digest
and cache key is built from these helpers, so two digests of the same thing agree.

A caller that has just hashed a file (or knows its digest from an unchanged earlier read)
passes the digest along with :func:`known_sha256`: within it, :func:`tree_sha256` of that
path returns the digest instead of reading the file again (the archive ingest hashes each
raw file once, though the reader it calls records the file's digest too).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = [
    "canonical_json",
    "json_sha256",
    "known_sha256",
    "new_digest",
    "text_sha256",
    "tree_sha256",
]

#: Bytes read from a file at a time.
BLOCK = 1 << 20
#: Digests passed along by :func:`known_sha256`: absolute path -> hex sha256.
_KNOWN: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("known_sha256", default=())


def canonical_json(value: Any) -> str:
    """JSON text with sorted keys and no spaces; NaN and infinity are refused.

    The same value always gives the same text, so its digest can be a fingerprint.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def new_digest() -> Any:
    """An empty sha256 digest (``update`` it with bytes, read ``hexdigest()``)."""
    return hashlib.sha256()


def text_sha256(text: str) -> str:
    """Hex sha256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_sha256(value: Any) -> str:
    """Hex sha256 of :func:`canonical_json` of ``value``."""
    return text_sha256(canonical_json(value))


def tree_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, or of a folder's files (relative path, then bytes).

    A folder's files are taken in sorted order, so the digest does not depend on the
    order the filesystem lists them in.
    """
    known = dict(_KNOWN.get()).get(os.path.abspath(path))
    if known is not None:
        return known
    root = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        if root.is_dir():
            digest.update(str(file.relative_to(root)).encode())
        _read_into(digest, file)
    return digest.hexdigest()


def _read_into(digest: Any, file: Path) -> None:
    """Update ``digest`` with the bytes of ``file``, :data:`BLOCK` bytes at a time."""
    with open(file, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)


@contextmanager
def known_sha256(path: str | Path, digest: str) -> Iterator[None]:
    """Within: :func:`tree_sha256` of ``path`` is ``digest``, the file is not read again.

    Parameters
    ----------
    path : str or Path
        The file or folder (any spelling of it: compared as an absolute path).
    digest : str
        Its hex sha256, as :func:`tree_sha256` gave it (or an earlier read recorded it
        while the file was unchanged).
    """
    token = _KNOWN.set((*_KNOWN.get(), (os.path.abspath(path), digest)))
    try:
        yield
    finally:
        _KNOWN.reset(token)
