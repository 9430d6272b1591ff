"""BVH motion files: a small numpy parser and BVH forward kinematics.

A BVH file has a ``HIERARCHY`` of joints (``ROOT``/``JOINT`` blocks with an ``OFFSET``
and ``CHANNELS``, ``End Site`` blocks with an ``OFFSET`` only) and a ``MOTION`` section
(``Frames: N``, ``Frame Time: dt``, then N lines holding every joint's channel values in
hierarchy order).

Forward kinematics, per frame: a joint's local transform is a translation by its
``OFFSET`` plus its position channels (``Xposition`` ... in the listed order; usually only
the root has them) followed by the rotation channels multiplied in the order listed,
``R = R_first @ R_second @ R_third`` (angles in degrees; any permutation of
``Xrotation``/``Yrotation``/``Zrotation``). World transforms compose parent first:
``p_joint = p_parent + R_parent @ (offset + translation)``, ``R_joint = R_parent @ R``.

Keypoints are the joints' world positions in hierarchy order; an ``End Site`` becomes an
extra keypoint ``<joint>_end`` placed after its joint. Lengths are in the file's units,
which BVH does not record: ``unit`` is ``"unknown"`` unless ``unit=`` is given; BVH says
nothing about the up axis either (Y is only customary): None (unknown) unless
``up_axis=``. The frame rate is ``1 / Frame Time``. Several ``ROOT`` hierarchies are
read as one individual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers._common import (
    UNKNOWN,
    check_options,
    fail,
    head_text,
    rename_keypoints,
    resolve_fps,
)
from pipeline.tracks.schema import make_tracks_dataset

FORMAT = "bvh"
SUFFIXES = (".bvh",)
SOFTWARE = "BVH"
CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")


@dataclass(frozen=True)
class Joint:
    """One hierarchy node: a joint, or an end site (no channels)."""

    name: str
    parent: int | None
    offset: tuple[float, ...]
    channels: tuple[str, ...]
    end_site: bool = False


class _Tokens:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.items = text.split()
        self.i = 0

    def next(self, what: str) -> str:
        if self.i >= len(self.items):
            raise fail(self.path, f"file ends inside the HIERARCHY, expected {what}")
        self.i += 1
        return self.items[self.i - 1]

    def expect(self, word: str) -> None:
        got = self.next(repr(word))
        if got != word:
            raise fail(self.path, f"expected {word!r} in the HIERARCHY, got {got!r}")

    def number(self, what: str) -> float:
        token = self.next(what)
        try:
            return float(token)
        except ValueError:
            raise fail(self.path, f"{what}: {token!r} is not a number") from None


def _parse_joint(tok: _Tokens, name: str, parent: int | None, joints: list[Joint]) -> None:
    tok.expect("{")
    tok.expect("OFFSET")
    offset = tuple(tok.number(f"OFFSET of {name}") for _ in range(3))
    index = len(joints)
    word = tok.next(f"CHANNELS of {name}")
    if word != "CHANNELS":
        raise fail(tok.path, f"joint {name!r}: expected CHANNELS after OFFSET, got {word!r}")
    count = tok.number(f"CHANNELS count of {name}")
    if count != int(count) or not 0 <= count <= 6:
        raise fail(tok.path, f"joint {name!r}: CHANNELS count {count} is not 0..6")
    channels = tuple(tok.next(f"channel of {name}") for _ in range(int(count)))
    bad = [c for c in channels if c not in CHANNELS]
    if bad or len(set(channels)) != len(channels):
        raise fail(
            tok.path,
            f"joint {name!r}: channels {list(channels)} (valid: {', '.join(CHANNELS)}, "
            "each at most once)",
        )
    joints.append(Joint(name, parent, offset, channels))
    while True:
        word = tok.next(f"JOINT, End Site or '}}' in {name}")
        if word == "}":
            return
        if word == "JOINT":
            _parse_joint(tok, tok.next("joint name"), index, joints)
        elif word == "End":
            tok.expect("Site")
            tok.expect("{")
            tok.expect("OFFSET")
            end = tuple(tok.number(f"End Site OFFSET of {name}") for _ in range(3))
            tok.expect("}")
            joints.append(Joint(f"{name}_end", index, end, (), end_site=True))
        else:
            raise fail(tok.path, f"joint {name!r}: unexpected {word!r} in its block")


def parse(path: str | Path) -> tuple[list[Joint], float, np.ndarray]:
    """Parse a BVH file.

    Returns
    -------
    joints : list of Joint
        Hierarchy order (parents first), end sites included.
    frame_time : float
        Seconds per frame.
    motion : ndarray, shape (n_frames, n_channels)
        Channel values, joints in hierarchy order.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise fail(path, f"cannot read the file as UTF-8 text ({err})") from None
    head, sep, motion_text = text.partition("MOTION")
    if not sep:
        raise fail(path, "no MOTION section (truncated file?)")
    tok = _Tokens(path, head)
    tok.expect("HIERARCHY")
    joints: list[Joint] = []
    while tok.i < len(tok.items):
        tok.expect("ROOT")
        _parse_joint(tok, tok.next("root name"), None, joints)
    if not joints:
        raise fail(path, "the HIERARCHY has no ROOT")
    names = [j.name for j in joints]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise fail(path, f"duplicated joint names {dupes}")
    lines = motion_text.strip().splitlines()
    if len(lines) < 2 or not lines[0].strip().startswith("Frames:"):
        raise fail(path, "MOTION must start with 'Frames: N' and 'Frame Time: dt'")
    try:
        n_frames = int(lines[0].split(":", 1)[1])
    except ValueError:
        raise fail(path, f"bad frame count line {lines[0].strip()!r}") from None
    if not lines[1].strip().startswith("Frame Time:"):
        raise fail(path, f"expected 'Frame Time: dt', got {lines[1].strip()!r}")
    try:
        frame_time = float(lines[1].split(":", 1)[1])
    except ValueError:
        raise fail(path, f"bad frame time line {lines[1].strip()!r}") from None
    n_channels = sum(len(j.channels) for j in joints)
    rows = [line.split() for line in lines[2:] if line.strip()]
    if len(rows) != n_frames:
        raise fail(path, f"'Frames: {n_frames}' but {len(rows)} frame lines (truncated file?)")
    for i, row in enumerate(rows):
        if len(row) != n_channels:
            raise fail(
                path,
                f"frame {i} has {len(row)} values, the HIERARCHY declares {n_channels} "
                "channels (truncated or malformed file)",
            )
    if n_frames == 0:
        raise fail(path, "no frames")
    try:
        motion = np.array(rows, dtype=np.float64).reshape(n_frames, n_channels)
    except ValueError as err:
        raise fail(path, f"non-numeric value in the MOTION data ({err})") from None
    return joints, frame_time, motion


def _axis_rotation(axis: str, degrees: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3) about a coordinate axis."""
    a = np.deg2rad(degrees)
    c, s = np.cos(a), np.sin(a)
    one, zero = np.ones_like(a), np.zeros_like(a)
    if axis == "X":
        rows = [[one, zero, zero], [zero, c, -s], [zero, s, c]]
    elif axis == "Y":
        rows = [[c, zero, s], [zero, one, zero], [-s, zero, c]]
    else:
        rows = [[c, -s, zero], [s, c, zero], [zero, zero, one]]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def forward_kinematics(
    joints: list[Joint], motion: np.ndarray, translation: str = "add"
) -> np.ndarray:
    """World positions of every joint and end site.

    Parameters
    ----------
    joints : list of Joint
        Hierarchy order, parents first.
    motion : ndarray, shape (n_frames, n_channels)
        Channel values (lengths in the file's unit, angles in degrees).
    translation : {"add", "replace"}
        Position channels add to the joint's ``OFFSET`` (the BVH description: the root's
        translation is the sum of its offset and its channels) or replace that offset
        component (as Blender's importer reads them).

    Returns
    -------
    ndarray, shape (n_frames, 3, n_joints)
    """
    n_frames = motion.shape[0]
    world_r = np.empty((len(joints), n_frames, 3, 3))
    world_p = np.empty((len(joints), n_frames, 3))
    column = 0
    for j, joint in enumerate(joints):
        values = motion[:, column : column + len(joint.channels)]
        column += len(joint.channels)
        local_p = np.broadcast_to(np.asarray(joint.offset, dtype=np.float64), (n_frames, 3)).copy()
        local_r = np.broadcast_to(np.eye(3), (n_frames, 3, 3)).copy()
        for k, channel in enumerate(joint.channels):
            axis = "XYZ".index(channel[0])
            if channel.endswith("position"):
                base = local_p[:, axis] if translation == "add" else 0.0
                local_p[:, axis] = base + values[:, k]
            else:
                local_r = local_r @ _axis_rotation(channel[0], values[:, k])
        if joint.parent is None:
            world_p[j], world_r[j] = local_p, local_r
        else:
            parent_r = world_r[joint.parent]
            world_p[j] = world_p[joint.parent] + np.einsum("fij,fj->fi", parent_r, local_p)
            world_r[j] = parent_r @ local_r
    return world_p.transpose(1, 2, 0)


def sniff(path: str | Path) -> bool:
    """Return True when the file starts with ``HIERARCHY``."""
    return head_text(path, 64).lstrip().startswith("HIERARCHY")


def read(
    path: str | Path,
    *,
    fps: float | None = None,
    keypoint_map: Mapping[str, str] | None = None,
    unit: str | None = None,
    up_axis: str | None = None,
    individual: str | None = None,
    translation: str = "add",
    session: str | None = None,
    **unknown: object,
) -> xr.Dataset:
    """Read a BVH file as keypoint tracks (the joints' world positions).

    Parameters
    ----------
    path : str or Path
        The ``.bvh`` file.
    fps : float, optional
        Used only when ``Frame Time`` is not positive.
    keypoint_map : mapping, optional
        Renames of joints (file name -> new name); every key must be in the file.
    unit : str, optional
        Length unit of the file (BVH does not record it); default ``"unknown"``.
    up_axis : str, optional
        Up axis (BVH does not record it); default None (unknown).
    individual : str, optional
        Name of the one individual.
    translation : {"add", "replace"}
        Whether position channels add to the ``OFFSET`` (default, the BVH description)
        or replace it (files whose root ``OFFSET`` repeats the first frame's position).
    session : str, optional
        Session name recorded in attrs.

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y, z], keypoint, individual)`` with the joints and end
        sites (``<joint>_end``), confidence NaN, ``time`` in seconds.

    Raises
    ------
    TracksError
        Malformed hierarchy, unknown channels, a frame count or channel count that does
        not match (truncated file), unknown keypoints in ``keypoint_map``.
    """
    path = Path(path)
    check_options(
        path,
        FORMAT,
        unknown,
        ("fps", "keypoint_map", "unit", "up_axis", "individual", "translation", "session"),
    )
    if translation not in ("add", "replace"):
        raise fail(path, f"translation={translation!r}; valid choices: 'add', 'replace'")
    joints, frame_time, motion = parse(path)
    rate = resolve_fps(path, SOFTWARE, 1.0 / frame_time if frame_time > 0 else None, fps)
    position = forward_kinematics(joints, motion, translation)
    return make_tracks_dataset(
        position[..., np.newaxis],
        None,
        keypoints=rename_keypoints(path, [j.name for j in joints], keypoint_map),
        individuals=None if individual is None else [individual],
        fps=rate,
        space=("x", "y", "z"),
        source_software=SOFTWARE,
        source_file=path,
        unit=unit if unit is not None else UNKNOWN,
        up_axis=up_axis,
        session=session,
        extra_attrs={"source_format": FORMAT, "frame_time": frame_time, "translation": translation},
    )
