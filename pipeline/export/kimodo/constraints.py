"""Parse and validate a Kimodo constraints file (Kimodo format, part 2, 4 and 6).

Beyond what Kimodo's own loader checks, every problem below is one :class:`KimodoError`
naming the file, the entry index and type, and the field: an unknown ``type``; a missing
field; arrays of the wrong shape or with non-numbers; a joint count that is not the
skeleton's (SOMA accepts 30 or 77, converted by joint name); unknown ``joint_names``;
frame indices that are not integers, negative, past the clip, or repeated with
different values; NaN or infinite numbers; a 3-column ``smooth_root_2d`` (Kimodo would
read its (x, y)); a zero ``global_root_heading``; and two entries that put different
values on the same frame and slot (the smoothed root or a joint position target by more
than 0.1 mm, the heading by more than 2 degrees), of which Kimodo would keep one
arbitrarily. Keys that no type knows draw a
:class:`KimodoWarning` (Kimodo ignores them).
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.export.kimodo.entry_checks import (
    CONFLICT_TOLERANCE,
    Where,
    dedupe,
    frame_indices,
    joint_rotations,
    numbers,
    two_columns,
)
from pipeline.export.kimodo.fk import heading_angle, kimodo_fk
from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.skeleton import EE_NAMES, SOMA_FAMILY, KimodoSkeleton
from pipeline.kinematics.rotations import expmap

__all__ = [
    "ENTRY_TYPES",
    "Constraints",
    "Entry",
    "KimodoWarning",
    "parse_constraints",
    "read_constraints_json",
    "target_joints",
]

ENTRY_TYPES: tuple[str, ...] = (
    "root2d",
    "fullbody",
    "left-hand",
    "right-hand",
    "left-foot",
    "right-foot",
    "end-effector",
)
#: End-effector names fixed by the four named types.
FIXED_EE: dict[str, tuple[str, ...]] = {
    "left-hand": ("LeftHand",),
    "right-hand": ("RightHand",),
    "left-foot": ("LeftFoot",),
    "right-foot": ("RightFoot",),
}
_KNOWN_KEYS = {
    "type",
    "frame_indices",
    "smooth_root_2d",
    "global_root_heading",
    "local_joints_rot",
    "root_positions",
    "joint_names",
}


#: Two headings of one frame closer than this agree (rad; 2 degrees).
HEADING_TOLERANCE = float(np.deg2rad(2.0))


class KimodoWarning(UserWarning):
    """A constraints file has content Kimodo ignores."""


@dataclass(frozen=True, eq=False)
class Entry:
    """One validated constraint entry, de-duplicated by frame.

    Attributes
    ----------
    index : int
        Position in the file's array.
    type : str
        One of :data:`ENTRY_TYPES`.
    frames : (K,) int array
        Unique frame indices, in the file's order of first appearance.
    smooth_root_2d : (K, 2) array or None
        ``(x, z)`` (m); for keyframe entries the file's value or the root's ``(x, z)``.
    heading : (K, 2) array or None
        ``root2d``: the file's ``global_root_heading`` ``(cos, sin)``, unit length.
    local_rot : (K, J, 3) array or None
        Rotation vectors (rad) in the target skeleton's joint order.
    root_positions : (K, 3) array or None
        Root positions (m).
    ee_names : tuple of str
        End-effectors (``LeftHand``, ..., ``Hips``) of hand/foot/end-effector entries.
    """

    index: int
    type: str
    frames: np.ndarray
    smooth_root_2d: np.ndarray | None = None
    heading: np.ndarray | None = None
    local_rot: np.ndarray | None = None
    root_positions: np.ndarray | None = None
    ee_names: tuple[str, ...] = ()

    @property
    def is_keyframe(self) -> bool:
        """True for fullbody and end-effector entries (they carry a full pose)."""
        return self.type != "root2d"


@dataclass(frozen=True, eq=False)
class Constraints:
    """A validated constraints file.

    Attributes
    ----------
    source : str
    skeleton : KimodoSkeleton
    entries : tuple of Entry
    n_frames : int
        Clip length: given (or from ``meta.json``), else the last constrained frame + 1.
    """

    source: str
    skeleton: KimodoSkeleton
    entries: tuple[Entry, ...]
    n_frames: int


def target_joints(entry: Entry, skeleton: KimodoSkeleton) -> list[int]:
    """Joints whose positions a keyframe entry constrains (Kimodo format, part 3).

    ``fullbody``: all joints. Hand/foot/end-effector: every joint of each expanded chain,
    the children of each chain's first joint (they are rigid with it, so their positions
    carry the chain's orientation constraint), and the root (its height and ground
    position are constrained too).
    """
    if entry.type == "fullbody":
        return list(range(skeleton.n_joints))
    out = {0}
    for name in entry.ee_names:
        chain = [skeleton.index(c) for c in skeleton.chains[name]]
        out.update(chain)
        out.update(skeleton.children(chain[0]))
    return sorted(out)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise KimodoError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def read_constraints_json(path: str | os.PathLike[str]) -> Any:
    """Decode a constraints file (UTF-8 JSON; a key repeated in one object is an error)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KimodoError(f"{file}: constraints file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KimodoError(f"{file}: cannot read the constraints file ({exc})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise KimodoError(
            f"{file}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except KimodoError as exc:
        raise KimodoError(f"{file}: not valid JSON: {exc}") from None


def _entry(obj: Any, index: int, file: str, skeleton, sibling, n_frames) -> Entry:
    if not isinstance(obj, dict):
        raise KimodoError(
            f"{file}: entry {index}: expected a JSON object, got {type(obj).__name__}"
        )
    kind = obj.get("type")
    where = Where(file, index, str(kind))
    if kind not in ENTRY_TYPES:
        hint = " (did you mean 'end-effector'?)" if kind == "end-effectors" else ""
        raise where.error("type", f"{kind!r} is not one of {', '.join(ENTRY_TYPES)}{hint}")
    unknown = sorted(set(obj) - _KNOWN_KEYS)
    if unknown:
        warnings.warn(f"{where.prefix}: keys {unknown} are ignored", KimodoWarning, stacklevel=4)
    frames = frame_indices(obj, where, n_frames)
    k = frames.size
    if kind == "root2d":
        if "smooth_root_2d" not in obj:
            raise where.error("smooth_root_2d", "missing required field")
        fields = {
            "smooth_root_2d": two_columns(obj, where, "smooth_root_2d", k),
            "global_root_heading": two_columns(obj, where, "global_root_heading", k),
        }
        heading = fields["global_root_heading"]
        if heading is not None:
            norm = np.linalg.norm(heading, axis=1)
            if np.any(norm < 1e-6):
                bad = int(frames[np.argmax(norm < 1e-6)])
                raise where.error("global_root_heading", f"(0, 0) at frame {bad} has no angle")
            fields["global_root_heading"] = heading / norm[:, None]
        frames, fields = dedupe(where, frames, fields)
        return Entry(
            index, kind, frames, fields["smooth_root_2d"], heading=fields["global_root_heading"]
        )
    for field in ("local_joints_rot", "root_positions"):
        if field not in obj:
            raise where.error(field, "missing required field")
    rot = joint_rotations(obj, where, k, skeleton, sibling)
    root = numbers(obj["root_positions"], where, "root_positions", (k, 3))
    smooth = two_columns(obj, where, "smooth_root_2d", k)
    fields = {"local_joints_rot": rot, "root_positions": root, "smooth_root_2d": smooth}
    frames, fields = dedupe(where, frames, fields)
    ee: tuple[str, ...] = FIXED_EE.get(kind, ())
    if kind == "end-effector":
        names = obj.get("joint_names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise where.error("joint_names", f"expected a non-empty list drawn from {EE_NAMES}")
        bad = [n for n in names if n not in EE_NAMES]
        if bad:
            raise where.error("joint_names", f"unknown {bad}; valid: {', '.join(EE_NAMES)}")
        ee = tuple(dict.fromkeys(names))
    root = fields["root_positions"]
    smooth = fields["smooth_root_2d"]
    return Entry(
        index,
        kind,
        frames,
        smooth if smooth is not None else root[:, [0, 2]],
        local_rot=fields["local_joints_rot"],
        root_positions=root,
        ee_names=ee,
    )


def _check_conflicts(file: str, entries: list[Entry], skeleton: KimodoSkeleton) -> None:
    """Refuse two entries that give one frame's slot different values."""
    slots: dict[tuple[Any, ...], tuple[Entry, np.ndarray]] = {}

    def put(entry: Entry, key: tuple[Any, ...], field: str, value: np.ndarray) -> None:
        if key not in slots:
            slots[key] = (entry, value)
            return
        other, seen = slots[key]
        if key[1] == "heading":
            gap, tolerance, unit = (
                abs(float(np.angle(np.exp(1j * (seen - value))))),
                HEADING_TOLERANCE,
                " rad",
            )
        else:
            gap, tolerance, unit = float(np.max(np.abs(seen - value))), CONFLICT_TOLERANCE, " m"
        if gap > tolerance:
            raise KimodoError(
                f"{file}: entry {entry.index} ({entry.type}): {field}: frame {key[0]} conflicts "
                f"with entry {other.index} ({other.type}) (values differ by {gap:.3g}{unit}); "
                "Kimodo would keep one of them arbitrarily"
            )

    for e in entries:
        positions = None
        if e.is_keyframe:
            positions, _ = kimodo_fk(skeleton, expmap(e.local_rot), e.root_positions)
            heading = heading_angle(skeleton, positions)
            joints = target_joints(e, skeleton)
        else:
            heading = None if e.heading is None else np.arctan2(e.heading[:, 1], e.heading[:, 0])
        for i, f in enumerate(e.frames.tolist()):
            put(e, (f, "root"), "smooth_root_2d", e.smooth_root_2d[i])
            if heading is not None:
                field = "global_root_heading" if e.heading is not None else "local_joints_rot"
                put(e, (f, "heading"), f"{field} (heading)", heading[i])
            if positions is not None:
                for j in joints:
                    name = skeleton.joint_names[j]
                    put(e, (f, j), f"local_joints_rot ({name} position)", positions[i, j])


def parse_constraints(
    data: Any,
    skeleton: KimodoSkeleton,
    *,
    source: str = "<constraints>",
    n_frames: int | None = None,
    sibling: KimodoSkeleton | None = None,
) -> Constraints:
    """Validate decoded constraints (a JSON array of entries) for ``skeleton``.

    Parameters
    ----------
    data : Any
        The decoded JSON.
    skeleton : KimodoSkeleton
    source : str
        File name used in messages.
    n_frames : int, optional
        Clip length; frames must lie in ``[0, n_frames)``.
    sibling : KimodoSkeleton, optional
        The other SOMA skeleton (``somaskel77`` for ``somaskel30`` and back): entries
        with its joint count are converted by joint name (joints it lacks get identity).

    Returns
    -------
    Constraints

    Raises
    ------
    KimodoError
        The first problem found (see the module docstring).
    """
    if sibling is not None and {skeleton.name, sibling.name} != set(SOMA_FAMILY):
        sibling = None
    if not isinstance(data, list):
        raise KimodoError(f"{source}: expected a JSON array of constraint objects")
    if not data:
        raise KimodoError(f"{source}: the array holds no constraints")
    entries = [_entry(obj, i, source, skeleton, sibling, n_frames) for i, obj in enumerate(data)]
    _check_conflicts(source, entries, skeleton)
    last = max(int(e.frames.max()) for e in entries)
    return Constraints(source, skeleton, tuple(entries), n_frames or last + 1)
