"""Names a user gives that become paths: session names.

A session name is stored as a folder path under the fits and tracks roots, so it must
stay inside them: ``/``-separated parts of letters, digits, ``.``, ``_`` and ``-`` that do
not start with ``.`` (no ``..``, not absolute), each short enough for the file system.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.errors import DiscoveryError

__all__ = ["MAX_SEGMENT_BYTES", "check_session_name"]

_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
#: Longest part of a session name (bytes): ``.<part>.zarr.partial`` stays under NAME_MAX.
MAX_SEGMENT_BYTES = 200


def check_session_name(name: Any, source: str = "session") -> str:
    """Return ``name`` if it is a safe session name, else raise :class:`DiscoveryError`."""
    if not isinstance(name, str) or not name:
        raise DiscoveryError(f"{source}: a session name must be a non-empty string")
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or not all(_SEGMENT.fullmatch(p) for p in parts):
        raise DiscoveryError(
            f"{source}: unsafe session name {name!r}; use letters, digits, '.', '_', '-' in "
            "'/'-separated parts that do not start with '.' (no '..', not absolute)"
        )
    too_long = [p for p in parts if len(p.encode()) > MAX_SEGMENT_BYTES]
    if too_long:
        raise DiscoveryError(
            f"{source}: session name part {too_long[0][:40]!r}... is too long "
            f"({len(too_long[0].encode())} bytes; at most {MAX_SEGMENT_BYTES}, so that its "
            "stores and their temporary twins fit the file system's name limit)"
        )
    return name
