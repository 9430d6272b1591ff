"""Hashing: canonical JSON and the digests of text, files and folders.

The only module of kinefit that imports :mod:`hashlib`: every fingerprint, content digest
and cache key is built from these helpers, so two digests of the same thing agree.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "json_sha256", "new_digest", "text_sha256", "tree_sha256"]

#: Bytes read from a file at a time.
BLOCK = 1 << 20


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
    root = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        if root.is_dir():
            digest.update(str(file.relative_to(root)).encode())
        with open(file, "rb") as handle:
            while block := handle.read(BLOCK):
                digest.update(block)
    return digest.hexdigest()
