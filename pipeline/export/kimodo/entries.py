"""The constraint entries of a Kimodo export, built from the motion on its skeleton.

:func:`build_entries` turns a :class:`~pipeline.export.kimodo.motion.KimodoMotion` and an
:class:`~pipeline.export.kimodo.export_config.ExportConfig` into the JSON-ready entries:
``root2d`` (dense or waypoints, optionally with ``global_root_heading``), ``fullbody``
keyframes, the four named hand/foot types and a generic ``end-effector``. Keyframe
entries carry rotation vectors for all ``J`` joints in skeleton order, the root position
and the smoothed root at their frames (the same values as the ``root2d`` path).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from pipeline.export.kimodo.constraints import KimodoWarning
from pipeline.export.kimodo.export_config import ExportConfig
from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.motion import KimodoMotion
from pipeline.export.kimodo.smooth import smooth_root_2d
from pipeline.kinematics.rotations import matrix_to_quat, quat_to_rotvec

__all__ = ["SPARSE_LIMIT", "build_entries"]

#: Kimodo works best with fewer keyframes than this per constraint type.
SPARSE_LIMIT = 20
_NAMED = {
    "left-hand": "left_hand",
    "right-hand": "right_hand",
    "left-foot": "left_foot",
    "right-foot": "right_foot",
}


def _f32(a: np.ndarray) -> list[Any]:
    return np.asarray(a, dtype=np.float32).tolist()


def _keyframe(kind: str, frames: np.ndarray, motion: KimodoMotion, smooth: np.ndarray) -> dict:
    rotvec = quat_to_rotvec(matrix_to_quat(motion.local_rot[frames]))
    return {
        "type": kind,
        "frame_indices": [int(f) for f in frames],
        "local_joints_rot": _f32(rotvec),
        "root_positions": _f32(motion.root_positions[frames]),
        "smooth_root_2d": _f32(smooth[frames]),
    }


def build_entries(motion: KimodoMotion, config: ExportConfig) -> list[dict[str, Any]]:
    """The constraint entries ``config`` asks for, as JSON-ready dicts.

    Parameters
    ----------
    motion : KimodoMotion
    config : ExportConfig

    Returns
    -------
    list of dict
        ``root2d`` first, then ``fullbody``, the named hand/foot types and
        ``end-effector``; float values rounded to float32 as Kimodo's saver does.
    """
    n = motion.n_frames
    smooth = smooth_root_2d(motion.root_positions[:, [0, 2]])
    entries: list[dict[str, Any]] = []
    if config.root2d != "off":
        frames = np.arange(n)
        if config.root2d == "waypoints":
            frames = np.unique(np.append(np.arange(0, n, config.root2d_every), n - 1))
        entry: dict[str, Any] = {
            "type": "root2d",
            "frame_indices": [int(f) for f in frames],
            "smooth_root_2d": _f32(smooth[frames]),
        }
        if config.root2d_heading:
            theta = motion.heading[frames]
            entry["global_root_heading"] = _f32(np.stack([np.cos(theta), np.sin(theta)], -1))
        entries.append(entry)
    specs = [("fullbody", config.fullbody)]
    specs += [(kind, getattr(config, attr)) for kind, attr in _NAMED.items()]
    specs.append(("end-effector", config.end_effector))
    for kind, spec in specs:
        if not spec:
            continue
        frames = spec.resolve(n, kind)
        if frames.size >= SPARSE_LIMIT:
            warnings.warn(
                f"{kind}: {frames.size} keyframes; Kimodo works best with fewer than "
                f"{SPARSE_LIMIT} per constraint type",
                KimodoWarning,
                stacklevel=2,
            )
        entry = _keyframe(kind, frames, motion, smooth)
        if kind == "end-effector":
            entry["joint_names"] = list(config.end_effector_joints)
        entries.append(entry)
    if not entries:
        raise KimodoError(
            "nothing to export: choose root2d and/or keyframes (fullbody, left-hand, "
            "right-hand, left-foot, right-foot, end-effector)"
        )
    return entries
