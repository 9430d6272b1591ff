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
frame.

Slides (translational DOFs, any joint, the root's too): a joint with slide DOFs gets a
child ``<joint>_slide`` (``_`` appended until the name is unique) with ``OFFSET 0 0 0``
and ``CHANNELS 3 Xposition Yposition Zposition``: the joint's origin after its own DOFs
(its keypoint moved by its slides, where the plan's children hang from), in the joint's
world-aligned rest axes, ``B_j^T (o_j - p_j)``; the joint's children hang from it. The
joint itself stays at its keypoint, so every plan joint reads back where the fit put it,
whatever the order of the joint's slides and rotations (the position channels take any
translation). With a zero offset, readers that add position channels to the offset and
readers that replace it by them agree.
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
from pipeline.kinematics.fk_jacobian import joint_frames
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


def slide_joints(plan: BodyPlan) -> list[int]:
    """Indices of the joints with slide DOFs (or slide axes driven by coupled coordinates)."""
    return [j for j, joint in enumerate(plan.joints) if any(a.type == "slide" for a in joint.axes)]


def motion(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray,
    root_orientation: np.ndarray,
    rotation_order: str = "ZXY",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Root positions, per-joint Euler channels and slide channels of poses.

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
    slides : (T, n_slide_joints, 3) array
        Position channels of the ``<joint>_slide`` children, :func:`slide_joints` order
        (length units).
    """
    positions, origins, rotations = joint_frames(plan, dof_values, root_position, root_orientation)
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
    moved = slide_joints(plan)
    shift = (origins - positions)[:, moved, :, None]
    slides = (np.swapaxes(frames[:, moved], -1, -2) @ shift)[..., 0]
    return positions[:, 0], np.degrees(channels), slides


def _name(name: str) -> str:
    return re.sub(r"\s+", "_", name)


def bvh_text(
    plan: BodyPlan,
    fps: float,
    position: np.ndarray,
    channels: np.ndarray,
    order: str,
    slides: np.ndarray | None = None,
) -> str:
    """The BVH file of a motion (see :func:`motion`; ``slides`` required with slide joints)."""
    rest = rest_rotations(plan)
    parent = plan.parent_indices
    children: dict[int, list[int]] = {i: [] for i in range(plan.n_joints)}
    for j, p in enumerate(parent):
        if p >= 0:
            children[int(p)].append(j)
    moved = {j: k for k, j in enumerate(slide_joints(plan))}
    taken = {_name(j.name) for j in plan.joints}
    rot = " ".join(f"{axis}rotation" for axis in order)
    lines = ["HIERARCHY"]
    columns: list[np.ndarray] = []

    def close(pad: str, leaf: bool) -> None:
        if leaf:
            lines.extend([f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET 0 0 0", f"{pad}  }}"])
        lines.append(f"{pad}}}")

    def emit(j: int, depth: int) -> None:
        pad = "  " * depth
        joint = plan.joints[j]
        if parent[j] < 0:
            lines.append(f"{pad}ROOT {_name(joint.name)}")
            offset = np.zeros(3)
            chans = f"CHANNELS 6 Xposition Yposition Zposition {rot}"
            columns.extend([position, channels[:, j]])
        else:
            lines.append(f"{pad}JOINT {_name(joint.name)}")
            offset = rest[parent[j]] @ np.asarray(joint.offset_pos, dtype=np.float64)
            chans = f"CHANNELS 3 {rot}"
            columns.append(channels[:, j])
        lines.extend([f"{pad}{{", f"{pad}  OFFSET {' '.join(f'{v:.10g}' for v in offset)}"])
        lines.append(f"{pad}  {chans}")
        inner, depth_in = pad, depth
        if j in moved:
            assert slides is not None
            name = _name(joint.name) + "_slide"
            while name in taken:
                name += "_"
            taken.add(name)
            inner, depth_in = pad + "  ", depth + 1
            lines.extend([f"{inner}JOINT {name}", f"{inner}{{", f"{inner}  OFFSET 0 0 0"])
            lines.append(f"{inner}  CHANNELS 3 Xposition Yposition Zposition")
            columns.append(slides[:, moved[j]])
        for c in children[j]:
            emit(c, depth_in + 1)
        close(inner, not children[j])
        if j in moved:
            close(pad, False)

    emit(0, 0)
    values = np.concatenate(columns, axis=1)
    lines += ["MOTION", f"Frames: {values.shape[0]}", f"Frame Time: {1.0 / fps:.10g}"]
    body = io.StringIO()
    np.savetxt(body, values, fmt="%.10g", delimiter=" ")
    return "\n".join(lines) + "\n" + body.getvalue()


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
        Unknown rotation order or individual, no frame rate.
    """
    order = rotation_order.upper()
    if order not in ROTATION_ORDERS:
        raise ExportError(
            f"bvh export: rotation order {rotation_order!r}; valid: {', '.join(ROTATION_ORDERS)}"
        )
    fps = frame_rate(fit, "bvh export")
    names = pick_individuals(fit, individual, "bvh export")
    result = []
    for name, path in split_by_individual(out, names):
        sel = fit.sel(individual=name)
        q = _fill(np.asarray(sel["dof_value"].transpose("time", "dof").values, dtype=np.float64))
        rp = _fill(np.asarray(sel["root_position"].transpose("time", "space").values, np.float64))
        rq = _fill(np.asarray(sel["root_orientation"].transpose("time", "quat").values, np.float64))
        position, channels, slides = motion(plan, q, rp, rq, order)
        text = bvh_text(plan, fps, position, channels, order, slides)
        result.append(Output(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8")))
    return result
