"""A fitted canonical pose as a canonical Kimodo motion: 30 fps, +Y up, metres, floor y = 0.

Steps (Kimodo format, part 5): resample the fit's pose to 30 fps (``root_position``
linearly, ``root_orientation`` and ``joint_rotation`` by slerp); carry it onto the
skeleton (:mod:`pipeline.export.kimodo.retarget`); turn the fit's world into Kimodo's
(``C``: up axis to +Y, a proper rotation; lengths times the unit's metres); rotate about +Y
so that the frame-0 heading is 0 and translate so that the frame-0 root is at XZ
``(0, 0)``; lift so that the floor is ``y = 0``. Fitted points map into the Kimodo
frame as ``kimodo = scale * rotation @ x + translation`` (:class:`KimodoMotion`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pipeline.errors import flag
from pipeline.export.kimodo.fk import (
    heading_angle,
    kimodo_fk,
    local_from_global,
    rot_y,
    slerp,
    up_axis_matrix,
)
from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.meta import FPS
from pipeline.export.kimodo.retarget import Retarget

__all__ = ["UNIT_METRES", "KimodoMotion", "kimodo_motion", "resample_pose", "unit_scale"]

#: Metres per length unit, by the names tracks stores use in ``attrs["unit"]``.
UNIT_METRES: dict[str, float] = {
    "m": 1.0,
    "metre": 1.0,
    "meter": 1.0,
    "dm": 0.1,
    "cm": 0.01,
    "mm": 0.001,
    "in": 0.0254,
    "ft": 0.3048,
}


def unit_scale(unit: str | None, where: str) -> float:
    """Metres per ``unit``; a :class:`KimodoError` listing the known units otherwise."""
    if unit in UNIT_METRES:
        return UNIT_METRES[unit]
    raise KimodoError(
        f"{where}: length unit {unit!r} is not one Kimodo's metres can be derived from; "
        f"pass the unit ({flag('unit')}), one of {', '.join(UNIT_METRES)}"
    )


@dataclass(frozen=True, eq=False)
class KimodoMotion:
    """A motion on a Kimodo skeleton, in Kimodo's canonical frame.

    Attributes
    ----------
    local_rot : (T, J, 3, 3) array
        Local rotations ``R_j`` (root: world orientation).
    root_positions : (T, 3) array
        Root positions (m).
    positions : (T, J, 3) array
        Kimodo FK of the above (m).
    heading : (T,) array
        Hip-pair heading (rad); ``heading[0]`` is 0.
    source_time : (T,) array
        Time of each frame on the fit's time axis (s).
    rotation : (3, 3) array
    scale : float
    translation : (3,) array
        ``kimodo = scale * rotation @ fit_point + translation``.
    start_heading : float
        Frame-0 heading (rad) in the fit's world after the up-axis turn, before
        canonicalisation.
    """

    local_rot: np.ndarray
    root_positions: np.ndarray
    positions: np.ndarray
    heading: np.ndarray
    source_time: np.ndarray
    rotation: np.ndarray
    scale: float
    translation: np.ndarray
    start_heading: float

    @property
    def n_frames(self) -> int:
        """Number of frames ``T``."""
        return int(self.root_positions.shape[0])

    def to_kimodo(self, points: np.ndarray) -> np.ndarray:
        """Map fit-world points ``(..., 3)`` into the Kimodo frame."""
        return self.scale * np.asarray(points) @ self.rotation.T + self.translation


def resample_pose(
    times: np.ndarray,
    root_position: np.ndarray,
    root_orientation: np.ndarray,
    joint_rotation: np.ndarray,
    fps: float = FPS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Resample a canonical pose to ``fps`` from ``times[0]`` up to ``times[-1]``.

    Parameters
    ----------
    times : (N,) array
        Strictly increasing time stamps (s).
    root_position : (N, 3) array
    root_orientation : (N, 4) array
    joint_rotation : (N, n_joints, 4) array

    Returns
    -------
    times, root_position, root_orientation, joint_rotation
        At ``times[0] + k / fps``; linear for positions, slerp for rotations (an input
        sample that falls on the new grid is kept exactly).
    """
    times = np.asarray(times, dtype=np.float64)
    count = int(np.floor((times[-1] - times[0]) * fps + 1e-6)) + 1
    new = times[0] + np.arange(count) / fps
    if times.size == 1:
        return new, root_position[:1], root_orientation[:1], joint_rotation[:1]
    i = np.clip(np.searchsorted(times, new + 1e-9, side="right") - 1, 0, times.size - 2)
    u = np.clip((new - times[i]) / (times[i + 1] - times[i]), 0.0, 1.0)
    u = np.where(np.abs(u) < 1e-9, 0.0, np.where(np.abs(u - 1) < 1e-9, 1.0, u))
    position = root_position[i] + u[:, None] * (root_position[i + 1] - root_position[i])
    orientation = slerp(root_orientation[i], root_orientation[i + 1], u)
    joints = slerp(joint_rotation[i], joint_rotation[i + 1], u[:, None])
    return new, position, orientation, joints


def kimodo_motion(
    retarget: Retarget,
    times: np.ndarray,
    root_position: np.ndarray,
    root_orientation: np.ndarray,
    joint_rotation: np.ndarray,
    *,
    scale: float,
    up_axis: str,
    floor: float | Literal["lowest"] = "lowest",
) -> KimodoMotion:
    """Carry a 30 fps canonical pose onto a Kimodo skeleton and canonicalise it.

    Parameters
    ----------
    retarget : Retarget
        Plan -> skeleton name map with rest alignments.
    times : (T,) array
        Frame times (s) on the fit's time axis, already at 30 fps.
    root_position, root_orientation, joint_rotation : arrays
        The fit's canonical pose at ``times`` (plan units; ``(w, x, y, z)``).
    scale : float
        Metres per plan length unit.
    up_axis : str
        The fit world's up axis (``x, y, z, -x, -y, -z``).
    floor : float or "lowest"
        Floor height along the up axis, in plan units; ``"lowest"`` puts the lowest
        Kimodo joint of the whole clip on ``y = 0``.

    Returns
    -------
    KimodoMotion
    """
    skeleton = retarget.skeleton
    c = up_axis_matrix(up_axis)
    plan_rot = retarget.plan_globals(root_orientation, joint_rotation)
    plan_pos = retarget.plan_positions(root_position, root_orientation, plan_rot)
    root_world = scale * plan_pos[:, retarget.source[0]] @ c.T
    glob = c @ retarget.kimodo_globals(plan_rot)
    first, _ = kimodo_fk(skeleton, local_from_global(skeleton.parents, glob[:1]), root_world[:1])
    start = float(heading_angle(skeleton, first)[0])
    turn = rot_y(-start)
    glob = turn @ glob
    root = root_world @ turn.T
    shift = np.array([-root[0, 0], 0.0, -root[0, 2]])
    local = local_from_global(skeleton.parents, glob)
    positions, _ = kimodo_fk(skeleton, local, root + shift)
    if floor == "lowest":
        shift[1] = -float(positions[..., 1].min())
    else:
        shift[1] = -scale * float(floor)
    root = root + shift
    positions[..., 1] += shift[1]
    heading = heading_angle(skeleton, positions)
    return KimodoMotion(
        local_rot=local,
        root_positions=root,
        positions=positions,
        heading=heading,
        source_time=np.asarray(times, dtype=np.float64),
        rotation=turn @ c,
        scale=float(scale),
        translation=shift,
        start_heading=start,
    )
