"""Field checks of one constraints entry: numbers, shapes, frames, duplicates.

Every check raises one :class:`KimodoError` that names the file, the entry index and
type, and the field (``c.json: entry 2 (left-hand): root_positions: ...``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.skeleton import KimodoSkeleton

__all__ = [
    "CONFLICT_TOLERANCE",
    "Where",
    "dedupe",
    "frame_indices",
    "joint_rotations",
    "numbers",
    "two_columns",
]

#: Two values of one slot closer than this agree (m, or unit-vector components).
CONFLICT_TOLERANCE = 1e-4


class Where:
    """Location of an entry, for messages: ``"<file>: entry <i> (<type>)"``."""

    def __init__(self, file: str, index: int, kind: str) -> None:
        self.prefix = f"{file}: entry {index} ({kind})"

    def error(self, field: str, what: str) -> KimodoError:
        """The error for ``field`` of this entry."""
        return KimodoError(f"{self.prefix}: {field}: {what}")


def numbers(value: Any, where: Where, field: str, shape: tuple[Any, ...]) -> np.ndarray:
    """A rectangular array of JSON numbers of ``shape`` (``None`` = any length)."""
    want = "[" + ", ".join("?" if s is None else str(s) for s in shape) + "]"
    arr = np.asarray(value, dtype=object) if isinstance(value, list) else None
    if arr is None or arr.ndim != len(shape):
        raise where.error(field, f"expected a nested list of shape {want}")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in arr.flat):
        raise where.error(field, f"expected numbers only, shape {want}")
    out = arr.astype(np.float64)
    if any(s is not None and s != n for s, n in zip(shape, out.shape, strict=True)):
        raise where.error(field, f"expected shape {want}, got {list(out.shape)}")
    if not np.all(np.isfinite(out)):
        bad = np.argwhere(~np.isfinite(out))[0].tolist()
        raise where.error(field, f"non-finite number (NaN or infinity) at index {bad}")
    return out


def frame_indices(obj: dict[str, Any], where: Where, n_frames: int | None) -> np.ndarray:
    """``(K,)`` frames: a non-empty list of integers inside ``[0, n_frames)``."""
    raw = obj.get("frame_indices")
    if raw is None:
        raise where.error("frame_indices", "missing required field")
    if not isinstance(raw, list) or not raw:
        raise where.error("frame_indices", "expected a non-empty list of integer frames")
    for f in raw:
        if isinstance(f, bool) or not isinstance(f, int):
            raise where.error("frame_indices", f"expected integers, got {f!r}")
        if f < 0 or (n_frames is not None and f >= n_frames):
            clip = f"[0, {n_frames})" if n_frames is not None else "[0, ...)"
            raise where.error("frame_indices", f"frame {f} is outside the clip {clip}")
    return np.asarray(raw, dtype=np.int64)


def joint_rotations(
    obj, where, k: int, skeleton: KimodoSkeleton, sibling: KimodoSkeleton | None
) -> np.ndarray:
    """``(K, J, 3)`` rotation vectors for ``skeleton``; a SOMA ``sibling``'s count is renamed.

    Joints ``skeleton`` has and the sibling lacks keep a zero rotation vector.
    """
    rot = numbers(obj.get("local_joints_rot"), where, "local_joints_rot", (k, None, 3))
    n = rot.shape[1]
    if n == skeleton.n_joints:
        return rot
    if sibling is not None and n == sibling.n_joints:
        out = np.zeros((k, skeleton.n_joints, 3))
        for j, name in enumerate(skeleton.joint_names):
            if name in sibling.joint_names:
                out[:, j] = rot[:, sibling.index(name)]
        return out
    valid = f"{skeleton.n_joints}" + (f" or {sibling.n_joints}" if sibling else "")
    raise where.error(
        "local_joints_rot", f"wrong joint count: {n} joints, skeleton {skeleton.name} has {valid}"
    )


def two_columns(obj, where: Where, field: str, k: int) -> np.ndarray | None:
    """``(K, 2)`` field, or None when absent; 3 columns get their own message."""
    if field not in obj:
        return None
    arr = numbers(obj[field], where, field, (k, None))
    if arr.shape[1] == 3 and field == "smooth_root_2d":
        raise where.error(
            field, "has 3 columns; write 2 columns (x, z): Kimodo would read (x, y) from 3"
        )
    if arr.shape[1] != 2:
        raise where.error(field, f"expected shape [{k}, 2], got {list(arr.shape)}")
    return arr


def dedupe(where: Where, frames: np.ndarray, fields: dict[str, np.ndarray | None]):
    """Drop repeated frames whose rows agree; a repeat with other values is an error."""
    unique, first = np.unique(frames, return_index=True)
    if unique.size == frames.size:
        return frames, fields
    for i, f in enumerate(frames):
        j = first[np.searchsorted(unique, f)]
        for name, arr in fields.items():
            if arr is not None and np.max(np.abs(arr[i] - arr[j])) > CONFLICT_TOLERANCE:
                raise where.error(
                    name,
                    f"frame {int(f)} is listed twice (positions {j} and {i}) with different values",
                )
    keep = np.sort(first)
    return frames[keep], {k: None if v is None else v[keep] for k, v in fields.items()}
