"""BVH motion files: BVH forward kinematics over the shared parser.

The text is parsed by :mod:`pipeline.formats.bvh_parse` (the body-plan importer's parser
too). A BVH file has a ``HIERARCHY`` of joints (``ROOT``/``JOINT`` blocks with an ``OFFSET``
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

from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.formats import bvh_parse
from pipeline.formats.bvh_parse import CHANNELS, Joint
from pipeline.tracks.readers.reader_helpers import fail, head_text, resolve_fps
from pipeline.tracks.schema import TracksError, make_tracks_dataset
from pipeline.tracks.units import UNKNOWN

FORMAT = "bvh"
SUFFIXES = (".bvh",)
SOFTWARE = "BVH"

__all__ = [
    "CHANNELS",
    "FORMAT",
    "SUFFIXES",
    "Joint",
    "forward_kinematics",
    "frame_rate",
    "parse",
    "read",
    "sniff",
]


def parse(path: str | Path) -> tuple[list[Joint], float, np.ndarray, str]:
    """Parse a BVH file (:mod:`pipeline.formats.bvh_parse`, shared with the importer).

    Returns
    -------
    joints : list of Joint
        Hierarchy order (parents first), end sites included.
    frame_time : float
        Seconds per frame.
    motion : ndarray, shape (n_frames, n_channels)
        Channel values, joints in hierarchy order.
    frame_time_text : str
        The ``Frame Time`` as printed in the file.

    Raises
    ------
    TracksError
        No ``MOTION`` section, a malformed hierarchy or motion section (with its line),
        no frames.
    """
    path = Path(path)

    def failed(reason: str) -> TracksError:
        return fail(path, reason)

    text = bvh_parse.read_text(path, failed)
    if not bvh_parse.has_motion(text):
        raise failed("no MOTION section (truncated file?)")
    joints = bvh_parse.hierarchy(text, failed)
    found = bvh_parse.motion(text, sum(len(j.channels) for j in joints), failed)
    if found.values.shape[0] == 0:
        raise failed("no frames")
    return joints, found.frame_time, found.values, found.frame_time_text


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
    return head_text(path, 64).lstrip("\ufeff \t\r\n").startswith("HIERARCHY")


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
