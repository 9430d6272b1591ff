"""Turn validated Kimodo constraints into IK targets: an ordinary tracks dataset.

Targets are built as Kimodo builds its conditioning (Kimodo format, part 4): rotation
vectors to matrices, FK on the skeleton's rest offsets with ``root_positions`` as the
root, then per entry type:

- ``fullbody``: every joint, confidence 1.
- hand/foot/``end-effector``: the joints of each expanded chain, the children of the
  chain's first joint (rigid with it, so they carry its orientation constraint) and the
  root (its height and ground position), confidence 1
  (:func:`~pipeline.export.kimodo.constraints.target_joints`).
- ``root2d``: the root joint at ``(x, y, z)`` with ``(x, z)`` the smoothed root. Tracks
  hold 3D points and the solver drops a keypoint with any NaN coordinate, so ``y`` is
  taken from the constrained frames around it (linear in frame number between
  ``root_positions`` heights of keyframe entries, held past the ends; the skeleton's
  standing root height, lowest rest joint on the floor, when the file has no keyframe).
  With a ``global_root_heading`` the hip pair gets targets too: the rest hip offsets
  turned by the heading about +Y around the root target (a keyframe's root where the
  frame has one). These points are only known to
  within Kimodo's 6 cm smoothing tolerance, so their confidence (the fit's weight) is
  ``(KEYFRAME_SIGMA / 0.06 m)**2 = 1/36`` of a keyframe target's: weights scale as
  ``1 / sigma**2``, and ``KEYFRAME_SIGMA`` = 1 cm is the accuracy we grant an exact
  keyframe target after retargeting onto another body. A keyframe target on the same
  frame and joint replaces them.

Frames without a constraint are missing (NaN, confidence NaN). Keypoints are the Kimodo
joint names, in metres, +Y up, 30 fps.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.export.kimodo.constraints import (
    Constraints,
    parse_constraints,
    read_constraints_json,
    target_joints,
)
from pipeline.export.kimodo.fk import kimodo_fk, rot_y
from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.meta import FPS, read_meta
from pipeline.export.kimodo.skeleton import SOMA_FAMILY, load_kimodo_skeleton
from pipeline.export.kimodo.smooth import SMOOTH_ROOT_RADIUS
from pipeline.kinematics.rotations import expmap
from pipeline.tracks.schema import make_tracks_dataset

__all__ = ["KEYFRAME_SIGMA", "ROOT2D_WEIGHT", "constraint_targets", "load_constraints", "read"]

#: Accuracy (m) granted to an exact keyframe target (sets the root2d weight).
KEYFRAME_SIGMA = 0.01
#: Confidence of root2d targets relative to keyframe targets: (1 cm / 6 cm)**2.
ROOT2D_WEIGHT = (KEYFRAME_SIGMA / SMOOTH_ROOT_RADIUS) ** 2


def load_constraints(
    path: str | os.PathLike[str],
    skeleton_file: str | os.PathLike[str],
    skeleton: str,
    *,
    n_frames: int | None = None,
    meta: str | os.PathLike[str] | None = None,
) -> Constraints:
    """Read and validate a constraints file for a skeleton of a skeletons file.

    Parameters
    ----------
    path : str or PathLike
        The constraints JSON.
    skeleton_file : str or PathLike
        Kimodo skeletons JSON.
    skeleton : str
        Skeleton name (``somaskel30``, ...).
    n_frames : int, optional
        Clip length. Default: from ``meta`` or a ``meta.json`` beside ``path`` (Kimodo's
        ``--input_folder`` layout), else the last constrained frame + 1.
    meta : str or PathLike, optional
        A ``meta.json`` giving the clip length.

    Returns
    -------
    Constraints
    """
    skel = load_kimodo_skeleton(skeleton_file, skeleton)
    sibling = None
    if skeleton in SOMA_FAMILY:
        other = [s for s in SOMA_FAMILY if s != skeleton][0]
        try:
            sibling = load_kimodo_skeleton(skeleton_file, other)
        except KimodoError:
            sibling = None
    if n_frames is None:
        beside = Path(path).with_name("meta.json")
        meta = meta if meta is not None else (beside if beside.is_file() else None)
        if meta is not None:
            n_frames = sum(read_meta(meta)[1])
    data = read_constraints_json(path)
    return parse_constraints(data, skel, source=str(path), n_frames=n_frames, sibling=sibling)


def _root_heights(constraints: Constraints) -> tuple[np.ndarray, np.ndarray]:
    frames, heights = [], []
    for e in constraints.entries:
        if e.is_keyframe:
            frames.append(e.frames)
            heights.append(e.root_positions[:, 1])
    if not frames:
        return np.empty(0), np.empty(0)
    f, h = np.concatenate(frames), np.concatenate(heights)
    order = np.argsort(f, kind="stable")
    return f[order].astype(np.float64), h[order]


def constraint_targets(
    constraints: Constraints, *, root2d_weight: float = ROOT2D_WEIGHT
) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame joint targets and confidences of a constraints file.

    Parameters
    ----------
    constraints : Constraints
    root2d_weight : float
        Confidence of root2d targets (keyframe targets have 1).

    Returns
    -------
    position : (n_frames, J, 3) array
        Targets (m); NaN where a joint is not constrained.
    confidence : (n_frames, J) array
        NaN where missing.
    """
    sk = constraints.skeleton
    n, nj = constraints.n_frames, sk.n_joints
    position = np.full((n, nj, 3), np.nan)
    confidence = np.full((n, nj), np.nan)
    for e in constraints.entries:
        if not e.is_keyframe:
            continue
        points, _ = kimodo_fk(sk, expmap(e.local_rot), e.root_positions)
        joints = target_joints(e, sk)
        position[np.ix_(e.frames, joints)] = points[:, joints]
        confidence[np.ix_(e.frames, joints)] = 1.0
    key_frames, key_heights = _root_heights(constraints)
    standing = -float(sk.rest_positions[:, 1].min())
    rest = sk.rest_positions
    for e in constraints.entries:
        if e.is_keyframe:
            continue
        y = np.interp(e.frames, key_frames, key_heights) if key_frames.size else standing
        y = np.broadcast_to(y, e.frames.shape)
        root = np.column_stack([e.smooth_root_2d[:, 0], y, e.smooth_root_2d[:, 1]])
        _put_soft(position, confidence, e.frames, 0, root, root2d_weight)
        if e.heading is not None:
            turn = rot_y(np.arctan2(e.heading[:, 1], e.heading[:, 0]))
            around = position[e.frames, 0]  # a keyframe's exact root where there is one
            for hip in sk.hip_indices:
                points = around + turn @ (rest[hip] - rest[0])
                _put_soft(position, confidence, e.frames, hip, points, root2d_weight)
    return position, confidence


def _put_soft(position, confidence, frames, joint, points, weight) -> None:
    """Write low-weight targets where no keyframe target sits already."""
    free = ~(confidence[frames, joint] >= 1.0)
    position[frames[free], joint] = points[free]
    confidence[frames[free], joint] = weight


def read(
    path: str | os.PathLike[str],
    *,
    skeleton_file: str | os.PathLike[str],
    skeleton: str,
    n_frames: int | None = None,
    meta: str | os.PathLike[str] | None = None,
    root2d_weight: float = ROOT2D_WEIGHT,
) -> xr.Dataset:
    """Read a Kimodo constraints file as a tracks dataset of IK targets.

    Parameters
    ----------
    path : str or PathLike
    skeleton_file : str or PathLike
        Kimodo skeletons JSON.
    skeleton : str
        Skeleton the file is written for.
    n_frames, meta :
        Clip length, see :func:`load_constraints`.
    root2d_weight : float
        Confidence of root2d targets (default 1/36, see the module docstring).

    Returns
    -------
    xarray.Dataset
        Movement poses schema: keypoints are the skeleton's joints, one individual
        ``kimodo``, 30 fps, unit ``m``, up axis ``y``.
    """
    constraints = load_constraints(path, skeleton_file, skeleton, n_frames=n_frames, meta=meta)
    position, confidence = constraint_targets(constraints, root2d_weight=root2d_weight)
    counts = {}
    for e in constraints.entries:
        counts[e.type] = counts.get(e.type, 0) + int(e.frames.size)
    return make_tracks_dataset(
        position.transpose(0, 2, 1),
        confidence,
        keypoints=constraints.skeleton.joint_names,
        individuals=["kimodo"],
        fps=float(FPS),
        source_software="kimodo constraints",
        source_file=path,
        unit="m",
        up_axis="y",
        session=Path(path).stem,
        extra_attrs={
            "kimodo_skeleton": skeleton,
            "kimodo_constrained_frames": counts,
            "kimodo_root2d_weight": float(root2d_weight),
        },
    )
