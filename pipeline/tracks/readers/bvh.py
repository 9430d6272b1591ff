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

Root translation: the BVH description (Biovision's, as in Meredith & Maddock, "Motion
capture file formats explained") gives a joint's translation as its ``OFFSET`` plus its
position channels, the root's included; that is the default here (``translation="add"``).
PyMO, bvhio and Blender's importer instead take the root's position channels as its
position and ignore the root ``OFFSET`` for them: ``translation="replace"`` matches those
tools (``-O translation=replace``). The two differ by the root ``OFFSET``, constant over
frames (on PyMO's demo walk, ``(11.3, 35.4, -54.3)``); files whose root ``OFFSET`` is zero
read the same either way.

Keypoints are the joints' world positions in hierarchy order; an ``End Site`` becomes an
extra keypoint ``<joint>_end`` placed after its joint. Lengths are in the file's units,
which BVH does not record: ``unit`` is ``"unknown"`` unless the ``unit`` option says; BVH
says nothing about the up axis either (Y is only customary): None (unknown) unless the
``up_axis`` option says. The frame rate is ``1 / Frame Time``, rounded to the whole
number of frames per second whose period the file prints (``Frame Time: 0.008333`` is
120 fps, not 120.0048): :func:`frame_rate`. Several ``ROOT`` hierarchies are read as one
individual.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers._common import fail, head_text, resolve_fps
from pipeline.tracks.schema import make_tracks_dataset
from pipeline.tracks.units import UNKNOWN

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


def parse(path: str | Path) -> tuple[list[Joint], float, np.ndarray, str]:
    """Parse a BVH file.

    Returns
    -------
    joints : list of Joint
        Hierarchy order (parents first), end sites included.
    frame_time : float
        Seconds per frame.
    frame_time_text : str
        The ``Frame Time`` as printed in the file.
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
    frame_time_text = lines[1].split(":", 1)[1].strip()
    try:
        frame_time = float(frame_time_text)
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
    return joints, frame_time, motion, frame_time_text


def frame_rate(frame_time: float, printed: str | None = None) -> float | None:
    """Frames per second of a ``Frame Time``; None when it is not positive.

    Writers print the period of a whole-number rate rounded (``0.008333`` for 120 fps,
    ``0.0333333`` for 30): when the nearest whole rate's period, printed with as many
    decimals as ``printed`` has, gives the same number back, that whole rate is the file's
    (so ``--fps 120`` does not conflict). Otherwise ``1 / frame_time``.
    """
    if not frame_time > 0:
        return None
    exact = 1.0 / frame_time
    whole = round(exact)
    if whole > 0:
        text = printed if printed is not None else repr(frame_time)
        decimals = len(text.partition(".")[2]) if "." in text and "e" not in text.lower() else None
        if decimals is not None and round(1.0 / whole, decimals) == round(frame_time, decimals):
            return float(whole)
        if abs(1.0 / whole - frame_time) <= 1e-9 * frame_time:
            return float(whole)
    return exact


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
    individual: str | None = None,
    translation: str = "add",
) -> xr.Dataset:
    """Read a BVH file as keypoint tracks (the joints' world positions).

    Parameters
    ----------
    path : str or Path
        The ``.bvh`` file.
    fps : float, optional
        Used only when ``Frame Time`` is not positive.
    individual : str, optional
        Name of the one individual.
    translation : {"add", "replace"}
        Position channels add to the ``OFFSET`` (default: the BVH description) or
        replace it (PyMO, bvhio and Blender; see the module docstring).

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y, z], keypoint, individual)`` with the joints and end
        sites (``<joint>_end``) in the file's unit (``"unknown"``), confidence NaN,
        ``time`` in seconds.

    Raises
    ------
    TracksError
        Malformed hierarchy, unknown channels, a frame count or channel count that does
        not match (truncated file), an unknown ``translation``.
    """
    path = Path(path)
    if translation not in ("add", "replace"):
        raise fail(
            path,
            f"option 'translation': {translation!r}; valid choices: 'add' (BVH description), "
            "'replace' (PyMO, bvhio, Blender)",
        )
    joints, frame_time, motion, printed = parse(path)
    rate = resolve_fps(path, SOFTWARE, frame_rate(frame_time, printed), fps)
    position = forward_kinematics(joints, motion, translation)
    return make_tracks_dataset(
        position[..., np.newaxis],
        None,
        keypoints=[j.name for j in joints],
        individuals=None if individual is None else [individual],
        fps=rate,
        space=("x", "y", "z"),
        source_software=SOFTWARE,
        source_file=path,
        unit=UNKNOWN,
        extra_attrs={"source_format": FORMAT, "frame_time": frame_time, "translation": translation},
    )
