"""The world frame of a fit: the tracks' up axis against the body plan's, and the turn between.

Tracks (3-D positions, and the cameras of a multi-view store) are in the world of the
system that recorded them: a calibration's or a C3D lab's world is usually Z up, an
OpenSim ``.trc`` Y up. Body plans have their own up axis: OpenSim models and BVH
skeletons are Y up, MJCF and URDF robots Z up, the mannequin Y up. A free root absorbs
any turn of the world, but the root's coordinates then mean the wrong thing (an upright
subject in a Z-up world fitted with a Y-up OpenSim model has a pelvis tilt near 90 deg).

Rules (:func:`resolve_world_frame`):

* A full world rotation given by the caller is used as it is.
* Otherwise the tracks' up axis (the ``up_axis`` option when given, else the tracks
  store's ``up_axis`` attr) and the plan's (:func:`plan_up_axis`): when both are known,
  the observations are turned by :func:`up_rotation` from the first to the second
  (identity when equal); when exactly one is known they may differ, so the fit runs
  unturned and warns (:class:`WorldFrameWarning`); when neither is known it runs
  unturned, silently (nothing says they differ).

:func:`up_rotation` is a proper rotation taking one up axis onto the other, passing
through +Y by cyclic permutations of the axes. Z up to Y up is ``(x, y, z) -> (y, z, x)``:
the turn Pose2Sim applies from its Z-up calibration to its Y-up ``.trc`` (trc X = world
Y, trc Y = world Z, trc Z = world X), and the one the Kimodo exporter uses.

The fit then works in the plan's frame: 3-D positions ``p`` become ``R @ p``; a camera
``x_cam = R_c @ x + t`` becomes ``R_c @ R.T`` with the same ``t``, so its pixels do not
change. The fit store records ``tracks_up_axis``, ``plan_up_axis``, ``world_rotation``
(``R``, 3 x 3, tracks -> plan) and ``fitted_frame`` ``"body plan"``; its ``up_axis`` is the
frame of its values (the plan's when a turn was applied). ``fitted_position`` and the root
coordinates are in that frame; :func:`to_tracks_frame` turns positions back.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.bodyplan.importers.finishing import PLAN_FORMAT_UP_AXES, plan_up_axis
from pipeline.errors import ConfigError
from pipeline.tracks.schema import check_up_axis

__all__ = [
    "PLAN_FORMAT_UP_AXES",
    "WorldFrame",
    "WorldFrameWarning",
    "check_up_axis",
    "plan_up_axis",
    "resolve_world_frame",
    "rotate_cameras",
    "rotate_positions",
    "to_tracks_frame",
    "up_rotation",
    "up_vector",
]

#: Fit store attrs this module writes.
FRAME_ATTRS = ("tracks_up_axis", "plan_up_axis", "world_rotation", "fitted_frame")


class WorldFrameWarning(UserWarning):
    """The tracks' and the body plan's up axes may differ and nothing says how."""


def up_vector(up: str) -> np.ndarray:
    """Unit vector (3,) of an up axis such as ``"-z"``."""
    up = check_up_axis(up, "up axis")
    v = np.zeros(3)
    v["xyz".index(up[-1])] = -1.0 if up.startswith("-") else 1.0
    return v


#: Rotation taking each positive up axis to +Y, keeping the axes' cyclic order: Z up to
#: Y up is ``(x, y, z) -> (y, z, x)``, the turn of Pose2Sim's ``.trc`` from its Z-up
#: calibration and of the Kimodo exporter (MuJoCo's x forward becomes Kimodo's +Z).
_TO_Y: dict[str, np.ndarray] = {
    "y": np.eye(3),
    "z": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    "x": np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
}
_FLIP = np.diag([1.0, -1.0, -1.0])  # 180 deg about +X: -Y -> +Y


def _to_y(up: str) -> np.ndarray:
    base = _TO_Y[up[-1]]
    return _FLIP @ base if up.startswith("-") else base


def up_rotation(source_up: str, target_up: str) -> np.ndarray:
    """Rotation ``R`` (3, 3) with ``R @ up_vector(source_up) == up_vector(target_up)``.

    ``R = C(target).T @ C(source)`` where ``C(u)`` takes ``u`` to +Y by a cyclic
    permutation of the axes (and a half turn about X for a negative axis): a proper
    rotation with entries 0 and +-1, the identity for equal axes.
    """
    source = check_up_axis(source_up, "up axis")
    target = check_up_axis(target_up, "up axis")
    return _to_y(target).T @ _to_y(source) + 0.0


@dataclass(frozen=True)
class WorldFrame:
    """The turn from the tracks' world into the body plan's frame.

    Attributes
    ----------
    tracks_up, plan_up : str or None
        Up axes (None: unknown).
    rotation : tuple of 3 tuples of 3 float
        ``R`` (tracks -> plan); the identity when nothing is turned.
    reason : str
        ``"rotation"`` (given), ``"up axes"`` (both known), ``"unknown"`` (one or both
        unknown: not turned).
    """

    tracks_up: str | None
    plan_up: str | None
    rotation: tuple[tuple[float, ...], ...] = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    reason: str = "unknown"

    @property
    def matrix(self) -> np.ndarray:
        """``R`` as an array (3, 3)."""
        return np.asarray(self.rotation, dtype=np.float64)

    @property
    def identity(self) -> bool:
        """Nothing is turned."""
        return bool(np.array_equal(self.matrix, np.eye(3)))

    @property
    def fit_up(self) -> str | None:
        """Up axis of the fit's values: the plan's once turned, else the tracks'."""
        if self.reason == "up axes" or (self.reason == "rotation" and self.plan_up):
            return self.plan_up
        return self.tracks_up if self.identity else None

    def attrs(self) -> dict[str, Any]:
        """The fit store's attrs of the frame (``up_axis`` and :data:`FRAME_ATTRS`)."""
        return {
            "up_axis": self.fit_up,
            "tracks_up_axis": self.tracks_up,
            "plan_up_axis": self.plan_up,
            "world_rotation": [list(row) for row in self.rotation],
            "fitted_frame": "body plan",
        }


def _as_rotation(rotation: Any, where: str) -> np.ndarray:
    r = np.asarray(rotation, dtype=np.float64)
    if r.shape != (3, 3) or not np.all(np.isfinite(r)):
        raise ConfigError(f"{where}: world_rotation must be a finite 3 x 3 matrix, got {r.shape}")
    if not np.allclose(r @ r.T, np.eye(3), atol=1e-6) or np.linalg.det(r) < 0:
        raise ConfigError(f"{where}: world_rotation is not a rotation (orthonormal, det +1)")
    return r


def resolve_world_frame(
    tracks_up: str | None,
    plan_up: str | None,
    *,
    up_axis: str | None = None,
    rotation: Sequence[Sequence[float]] | np.ndarray | None = None,
    source: str = "<tracks>",
) -> WorldFrame:
    """Decide the turn of a fit's observations (the rules of the module docstring).

    Parameters
    ----------
    tracks_up, plan_up : str or None
        The tracks store's ``up_axis`` attr and :func:`plan_up_axis`.
    up_axis : str, optional
        The tracks' up axis stated by the user; replaces ``tracks_up``.
    rotation : array (3, 3), optional
        A full world rotation (tracks -> plan); replaces the up-axis rule.
    source : str
        Name in messages.

    Returns
    -------
    WorldFrame

    Warns
    -----
    WorldFrameWarning
        Exactly one of the two up axes is known (and no rotation is given).
    """
    tracks_up = check_up_axis(up_axis if up_axis is not None else tracks_up, f"{source}: up_axis")
    plan_up = check_up_axis(plan_up, f"{source}: body plan up axis")
    if rotation is not None:
        r = _as_rotation(rotation, source)
        return WorldFrame(tracks_up, plan_up, tuple(map(tuple, r.tolist())), "rotation")
    if tracks_up is not None and plan_up is not None:
        r = up_rotation(tracks_up, plan_up)
        return WorldFrame(tracks_up, plan_up, tuple(map(tuple, r.tolist())), "up axes")
    if (tracks_up is None) != (plan_up is None):
        unknown, known = ("tracks'", plan_up) if tracks_up is None else ("body plan's", tracks_up)
        other = "body plan's" if tracks_up is None else "tracks'"
        warnings.warn(
            f"{source}: the {unknown} up axis is unknown and the {other} is {known!r}; "
            "fitting without turning the world, so the root's angles may be off by a "
            "quarter turn: state it with --up-axis (up_axis= in the run config) or give a "
            "world_rotation",
            WorldFrameWarning,
            stacklevel=2,
        )
    return WorldFrame(tracks_up, plan_up)


def rotate_positions(position: np.ndarray, rotation: np.ndarray, axis: int) -> np.ndarray:
    """Turn 3-D positions whose coordinates lie along ``axis``: ``p -> R @ p`` (NaN kept)."""
    moved = np.moveaxis(np.asarray(position), axis, -1)
    out = moved @ np.asarray(rotation, dtype=moved.dtype).T
    return np.moveaxis(out, -1, axis).astype(np.asarray(position).dtype, copy=False)


def to_tracks_frame(position: np.ndarray, rotation: Any, axis: int) -> np.ndarray:
    """Turn positions in the plan's frame back to the tracks' world: ``p -> R.T @ p``."""
    return rotate_positions(position, np.asarray(rotation, dtype=np.float64).T, axis)


def rotate_cameras(cameras: Sequence[Any], rotation: np.ndarray) -> list[Any]:
    """Cameras seeing the turned world: rotation ``R_c @ R.T``, translation unchanged.

    Parameters
    ----------
    cameras : sequence of Camera
    rotation : array (3, 3)
        ``R`` (tracks -> plan).
    """
    r = np.asarray(rotation, dtype=np.float64)
    return [dataclasses.replace(cam, rotation=cam.rotation_matrix @ r.T) for cam in cameras]
