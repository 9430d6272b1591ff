"""BVH export: the fitted skeleton and its motion, one file per individual.

Hierarchy: every joint of the plan is a BVH ``JOINT`` (the plan's root is the ``ROOT``)
named as in the plan (whitespace becomes ``_``); a joint without children ends in an
``End Site`` at zero offset. Rest offsets come from the plan, expressed in world-aligned
rest axes (BVH has no rest rotation per joint): a child's ``OFFSET`` is ``W_parent @
offset_pos``, where ``W`` is the product of the ``offset_quat`` rest rotations down the
tree, so zero channels are the plan's rest pose.

Motion: the root has ``Xposition Yposition Zposition`` (the root keypoint's world
position) and every joint three rotation channels in the stated ``rotation_order``
(default ``ZXY``: intrinsic, ``R = Rz @ Rx @ Ry``), degrees, whatever its kind (hinge,
universal, ball and fixed joints alike). A joint's channels are its local rotation in
those world-aligned rest axes, ``C_j = B_parent^T B_j`` with ``B_j = G_j W_j^T`` and
``G_j`` the joint's fitted world rotation (forward kinematics of the canonical pose in
float64), so reading the file back puts every joint where the fit put it. Channels are
unwrapped over time (no 360 degree flips). ``Frame Time`` is ``1 / fps``. Lengths are
the fit's units (BVH records none); frames the solver left NaN repeat the nearest fitted
frame. Plans with slide DOFs below the root have no BVH equivalent and are refused.
"""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
from scipy.spatial.transform import Rotation

from pipeline.bodyplan import BodyPlan
from pipeline.bodyplan.angles import unwrap
from pipeline.errors import ExportError
from pipeline.export.common import (
    Output,
    frame_rate,
    pick_individuals,
    split_by_individual,
    written_by,
)
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.rotations import quat_to_matrix

#: The format contract's declaration (:mod:`pipeline.formats.contract`).
FORMAT = "bvh"
SUFFIXES = (".bvh",)
SUMMARY = "BVH skeleton and motion"
sniff = written_by(FORMAT)

__all__ = ["ROTATION_ORDERS", "bvh_text", "outputs"]

#: Valid ``rotation_order`` values (Tait-Bryan, intrinsic, as BVH channels list them).
ROTATION_ORDERS: tuple[str, ...] = ("ZXY", "ZYX", "XYZ", "XZY", "YXZ", "YZX")


def rest_rotations(plan: BodyPlan) -> np.ndarray:
    """``(n_joints, 3, 3)`` world rest rotations ``W`` (products of ``offset_quat``)."""
    local = quat_to_matrix(np.array([j.offset_quat for j in plan.joints], dtype=np.float64))
    out = np.empty_like(local)
    for j, parent in enumerate(plan.parent_indices):
        out[j] = local[j] if parent < 0 else out[parent] @ local[j]
    return out


def _fill(values: np.ndarray) -> np.ndarray:
    """Replace NaN frames (axis 0) by the nearest earlier frame, else the next one."""
    bad = ~np.isfinite(values).reshape(values.shape[0], -1).all(axis=1)
    if not bad.any():
        return values
    if bad.all():
        raise ExportError("bvh export: the individual has no fitted frame")
    good = np.flatnonzero(~bad)
    idx = np.searchsorted(good, np.arange(values.shape[0]), side="right") - 1
    return values[good[np.clip(idx, 0, None)]]


def motion(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray,
    root_orientation: np.ndarray,
    rotation_order: str = "ZXY",
) -> tuple[np.ndarray, np.ndarray]:
    """Root positions and per-joint Euler channels of poses.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (T, n_dofs) array
    root_position : (T, 3) array
    root_orientation : (T, 4) array
        ``(w, x, y, z)``.
    rotation_order : str
        One of :data:`ROTATION_ORDERS`.

    Returns
    -------
    position : (T, 3) array
        World position of the root keypoint (length units).
    channels : (T, n_joints, 3) array
        Degrees, in ``rotation_order``, unwrapped over time.
    """
    positions, rotations = forward_kinematics(
        plan, dof_values, root_position, root_orientation, return_rotations=True
    )
    rest = rest_rotations(plan)
    frames = rotations @ np.swapaxes(rest, -1, -2)  # B_j = G_j W_j^T
    parent = plan.parent_indices
    local = frames.copy()
    child = parent >= 0
    local[:, child] = np.swapaxes(frames[:, parent[child]], -1, -2) @ frames[:, child]
    flat = local.reshape(-1, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # gimbal lock still recomposes exactly
        euler = Rotation.from_matrix(flat).as_euler(rotation_order)
    channels = unwrap(euler.reshape(local.shape[:2] + (3,)), axis=0)
    return positions[:, 0], np.degrees(channels)


def _name(name: str) -> str:
    return re.sub(r"\s+", "_", name)


def bvh_text(
    plan: BodyPlan, fps: float, position: np.ndarray, channels: np.ndarray, order: str
) -> str:
    """The BVH file of a motion (see :func:`motion`)."""
    rest = rest_rotations(plan)
    parent = plan.parent_indices
    children: dict[int, list[int]] = {i: [] for i in range(plan.n_joints)}
    for j, p in enumerate(parent):
        if p >= 0:
            children[int(p)].append(j)
    rot = " ".join(f"{axis}rotation" for axis in order)
    lines = ["HIERARCHY"]

    def emit(j: int, depth: int) -> None:
        pad = "  " * depth
        joint = plan.joints[j]
        if parent[j] < 0:
            lines.append(f"{pad}ROOT {_name(joint.name)}")
            offset = np.zeros(3)
            chans = f"CHANNELS 6 Xposition Yposition Zposition {rot}"
        else:
            lines.append(f"{pad}JOINT {_name(joint.name)}")
            offset = rest[parent[j]] @ np.asarray(joint.offset_pos, dtype=np.float64)
            chans = f"CHANNELS 3 {rot}"
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {' '.join(f'{v:.10g}' for v in offset)}")
        lines.append(f"{pad}  {chans}")
        for c in children[j]:
            emit(c, depth + 1)
        if not children[j]:
            lines.extend([f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET 0 0 0", f"{pad}  }}"])
        lines.append(f"{pad}}}")

    emit(0, 0)
    order_of = _tree_order(children)
    values = np.concatenate(
        [position, channels[:, order_of].reshape(channels.shape[0], -1)], axis=1
    )
    lines += ["MOTION", f"Frames: {values.shape[0]}", f"Frame Time: {1.0 / fps:.10g}"]
    body = io.StringIO()
    np.savetxt(body, values, fmt="%.10g", delimiter=" ")
    return "\n".join(lines) + "\n" + body.getvalue()


def _tree_order(children: dict[int, list[int]]) -> list[int]:
    """Joints in the depth-first order the hierarchy lists them (channel order)."""
    out: list[int] = []
    stack = [0]
    while stack:
        j = stack.pop()
        out.append(j)
        stack.extend(reversed(children[j]))
    return out


def outputs(
    fit: xr.Dataset,
    plan: BodyPlan,
    out: Path,
    *,
    individual: str | None = None,
    rotation_order: str = "ZXY",
) -> list[Output]:
    """The BVH files of a fit: one per individual (``<stem>.<individual>.bvh`` if several).

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit store.
    plan : BodyPlan
        The fitted plan.
    out : Path
    individual : str, optional
        Only this individual.
    rotation_order : str
        One of :data:`ROTATION_ORDERS`.

    Returns
    -------
    list of Output

    Raises
    ------
    ExportError
        Unknown rotation order or individual, no frame rate, slide DOFs below the root.
    """
    order = rotation_order.upper()
    if order not in ROTATION_ORDERS:
        raise ExportError(
            f"bvh export: rotation order {rotation_order!r}; valid: {', '.join(ROTATION_ORDERS)}"
        )
    slides = [
        plan.joints[plan.dof_joint[i]].name for i, d in enumerate(_dofs(plan)) if d == "slide"
    ]
    if slides:
        raise ExportError(
            f"bvh export: joint(s) {', '.join(sorted(set(slides)))} have slide DOFs, which BVH "
            "cannot express (only the root translates)"
        )
    fps = frame_rate(fit, "bvh export")
    names = pick_individuals(fit, individual, "bvh export")
    result = []
    for name, path in split_by_individual(out, names):
        sel = fit.sel(individual=name)
        q = _fill(np.asarray(sel["dof_value"].transpose("time", "dof").values, dtype=np.float64))
        rp = _fill(np.asarray(sel["root_position"].transpose("time", "space").values, np.float64))
        rq = _fill(np.asarray(sel["root_orientation"].transpose("time", "quat").values, np.float64))
        position, channels = motion(plan, q, rp, rq, order)
        text = bvh_text(plan, fps, position, channels, order)
        result.append(Output(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8")))
    return result


def _dofs(plan: BodyPlan) -> list[str]:
    return [d.type for j in plan.joints for d in j.dofs]
