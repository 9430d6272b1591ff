"""Batched forward kinematics and keypoint Jacobians.

Semantics (those of :mod:`pipeline.bodyplan.model`): a joint's origin is
``parent_origin + parent_rotation @ offset_pos`` and its frame
``parent_rotation @ R(offset_quat)``; its DOFs then apply in order (hinge:
``R <- R @ R(axis, q)``; slide: ``origin += R @ axis * q``; a ball's swing pair:
``R <- R @ exp(q1 b1 + q2 b2)``). A joint's keypoint is its origin *before* its own
DOFs. The root pose ``(root_position, root_orientation)`` applies before the root's offset.

The Jacobian columns are, for a keypoint ``p``: root position ``I``; root rotation
(world-frame increment ``R <- exp(delta) R``) ``-[p - root_position]x``; a rotational DOF
with world axis ``u`` and pivot ``o``: ``u x (p - o)``; a slide with world direction ``u``:
``u``. For a ball's swing coordinates the world axis is ``R_before @ J_l(s) @ b``, with
``J_l`` the left Jacobian of SO(3).

A coupled model (driven axes, :mod:`pipeline.kinematics.plan_arrays`) runs the same pass over
its *steps*, each at its value from :func:`~pipeline.kinematics.couplings.step_values`;
a DOF's Jacobian column is then the sum, over the steps it drives, of the step's column
times the step's derivative along the DOF (the chain rule through the functions).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.couplings import step_values
from pipeline.kinematics.plan_arrays import (
    HINGE,
    HINGE_ALIGNED,
    SLIDE,
    SWING1,
    KinematicModel,
    compile_plan,
)
from pipeline.kinematics.rotations import (
    axis_angle_matrix,
    expmap,
    left_jacobian,
    matrix_to_quat,
    quat_normalize,
    quat_to_matrix,
)

__all__ = [
    "FKState",
    "fk_state",
    "forward_kinematics",
    "joint_frames",
    "joint_rotations_local",
    "jacobian",
]


class FKState(NamedTuple):
    """Everything one forward pass produces for a batch of ``S`` poses.

    Attributes
    ----------
    positions : (S, J, 3)
        Keypoint (joint origin before its own DOFs) world positions.
    rotations : (S, J, 3, 3)
        Each joint's world frame after its own DOFs.
    axes : (S, M, 3)
        World axis (rotational steps) or direction (slides) of every step (``M`` =
        ``n_dofs`` unless the model is coupled).
    pivots : (S, M, 3)
        World point each rotational step turns about.
    root_position : (S, 3)
    chain : (S, M) array or None
        Coupled models: each step's derivative along its root DOF (``step_values``).
    origins : (S, J, 3) array or None
        Each joint's frame origin after its own DOFs (its keypoint moved by its slides),
        where its children's offsets start.
    """

    positions: np.ndarray
    rotations: np.ndarray
    axes: np.ndarray
    pivots: np.ndarray
    root_position: np.ndarray
    chain: np.ndarray | None = None
    origins: np.ndarray | None = None


def _matvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``m @ v`` for (..., n, 3, 3) matrices and constant (n, 3) vectors."""
    return m[..., 0] * v[:, 0, None] + m[..., 1] * v[:, 1, None] + m[..., 2] * v[:, 2, None]


def fk_state(
    model: KinematicModel,
    q: np.ndarray,
    root_position: np.ndarray | None = None,
    root_rotation: np.ndarray | None = None,
    need_axes: bool = True,
) -> FKState:
    """Forward pass over a flat batch (the solver's hot path).

    Parameters
    ----------
    model : KinematicModel
    q : (S, N) array
        DOF values, in ``model.dtype``.
    root_position : (S, 3) array or None
        World position of the root pose (origin when None).
    root_rotation : (S, 3, 3) array or None
        World rotation of the root pose (identity when None).
    need_axes : bool
        Fill ``axes`` and ``pivots`` (needed for Jacobians only).

    Returns
    -------
    FKState
    """
    dt = model.dtype
    s = q.shape[0]
    nj = model.n_joints
    pos = np.empty((s, nj, 3), dt)
    rot_after = np.empty((s, nj, 3, 3), dt)
    org_after = np.empty((s, nj, 3), dt)
    q, chain = step_values(model, q)
    m = model.n_steps
    axes = np.empty((s, m, 3), dt)
    pivots = np.empty((s, m, 3), dt)
    if root_position is None:
        root_position = np.zeros((s, 3), dt)
    sign, dof_axis = model.step_sign, model.step_axis
    signed = q * sign
    cos, sin = np.cos(signed), np.sin(signed)
    for lev in model.levels:
        if lev.parents[0] < 0:
            if root_rotation is None:
                r_in = np.broadcast_to(np.eye(3, dtype=dt), (s, 1, 3, 3))
            else:
                r_in = root_rotation[:, None]
            o_in = root_position[:, None]
            rot = np.array(r_in, dtype=dt)
        else:
            rot = rot_after[:, lev.parents]
            o_in = org_after[:, lev.parents]
        org = o_in + _matvec(rot, model.offset_pos[lev.joints])
        if not lev.offset_identity:
            rot = np.matmul(rot, model.offset_rot[lev.joints])
        pos[:, lev.joints] = org
        n_level = lev.joints.size
        for slot in lev.slots:
            for op, local, dofs, ax in slot:
                whole = local.size == n_level
                r = rot if whole else rot[:, local]
                o = org if whole else org[:, local]
                if op == HINGE_ALIGNED:
                    j, k = (ax + 1) % 3, (ax + 2) % 3
                    if need_axes:
                        axes[:, dofs] = r[..., ax] * sign[dofs, None]
                        pivots[:, dofs] = o
                    c, sn = cos[:, dofs, None], sin[:, dofs, None]
                    cj, ck = r[..., j], r[..., k]
                    r[..., j], r[..., k] = c * cj + sn * ck, c * ck - sn * cj
                elif op == HINGE:
                    if need_axes:
                        axes[:, dofs] = _matvec(r, dof_axis[dofs])
                        pivots[:, dofs] = o
                    r = np.matmul(r, axis_angle_matrix(dof_axis[dofs], q[:, dofs]))
                elif op == SLIDE:
                    u = _matvec(r, dof_axis[dofs])
                    if need_axes:
                        axes[:, dofs] = u
                        pivots[:, dofs] = o
                    o = o + u * q[:, dofs, None]
                else:  # SWING1: the ball's swing pair (dofs, dofs + 1)
                    b1 = dof_axis[dofs]
                    b2 = dof_axis[dofs + 1]
                    sv = q[:, dofs, None] * b1 + q[:, dofs + 1, None] * b2
                    if need_axes:
                        rj = np.matmul(r, left_jacobian(sv))
                        axes[:, dofs] = _matvec(rj, b1)
                        axes[:, dofs + 1] = _matvec(rj, b2)
                        pivots[:, dofs] = o
                        pivots[:, dofs + 1] = o
                    r = np.matmul(r, expmap(sv))
                if whole:
                    rot, org = r, o
                else:
                    rot[:, local] = r
                    org[:, local] = o
        rot_after[:, lev.joints] = rot
        org_after[:, lev.joints] = org
    return FKState(pos, rot_after, axes, pivots, root_position, chain, org_after)


def _prepare(plan: BodyPlan, dof_values, root_position, root_orientation):
    q = np.asarray(dof_values)
    dtype = q.dtype if q.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    q = q.astype(dtype, copy=False)
    if q.shape[-1] != plan.n_dofs:
        raise ValueError(
            f"dof_values has {q.shape[-1]} values in its last axis; the body plan has "
            f"{plan.n_dofs} DOFs"
        )
    lead = q.shape[:-1]
    model = compile_plan(plan, dtype)
    flat = q.reshape(-1, plan.n_dofs)
    rp = None
    if root_position is not None:
        rp = np.broadcast_to(np.asarray(root_position, dtype), lead + (3,)).reshape(-1, 3)
    rr = None
    if root_orientation is not None:
        quat = np.broadcast_to(np.asarray(root_orientation, dtype), lead + (4,)).reshape(-1, 4)
        rr = quat_to_matrix(quat_normalize(quat))
    return model, flat, rp, rr, lead


def forward_kinematics(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray | None = None,
    root_orientation: np.ndarray | None = None,
    return_rotations: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """World keypoint positions of a body plan, batched over leading axes.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (..., n_dofs) array
        DOF values (rad for rotations, length units for slides). float32 or float64;
        other dtypes compute in float64.
    root_position : (..., 3) array, optional
        Root pose position (length units); the origin when omitted.
    root_orientation : (..., 4) array, optional
        Root pose orientation as a quaternion ``(w, x, y, z)``; identity when omitted.
    return_rotations : bool
        Also return each joint's world rotation after its own DOFs.

    Returns
    -------
    positions : (..., n_joints, 3) array
    rotations : (..., n_joints, 3, 3) array
        Only when ``return_rotations`` is true.
    """
    model, q, rp, rr, lead = _prepare(plan, dof_values, root_position, root_orientation)
    st = fk_state(model, q, rp, rr)
    positions = st.positions.reshape(lead + (plan.n_joints, 3))
    if return_rotations:
        return positions, st.rotations.reshape(lead + (plan.n_joints, 3, 3))
    return positions


def joint_frames(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray | None = None,
    root_orientation: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keypoints, joint origins after their own DOFs and joint rotations, batched.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (..., n_dofs) array
        Rad for rotations, length units for slides.
    root_position : (..., 3) array, optional
    root_orientation : (..., 4) array, optional
        ``(w, x, y, z)``.

    Returns
    -------
    positions : (..., n_joints, 3) array
        Keypoints (:func:`forward_kinematics`), length units.
    origins : (..., n_joints, 3) array
        Each joint's origin after its slides (its keypoint where it has none), length units.
    rotations : (..., n_joints, 3, 3) array
        Each joint's world rotation after its own DOFs.
    """
    model, q, rp, rr, lead = _prepare(plan, dof_values, root_position, root_orientation)
    st = fk_state(model, q, rp, rr, need_axes=False)
    assert st.origins is not None
    shape = lead + (plan.n_joints,)
    return (
        st.positions.reshape(shape + (3,)),
        st.origins.reshape(shape + (3,)),
        st.rotations.reshape(shape + (3, 3)),
    )


def jacobian_from_state(model: KinematicModel, st: FKState) -> np.ndarray:
    """Dense keypoint Jacobians from a forward pass.

    Returns
    -------
    (S, J, 3, n_root + N) array
        Columns: root position (3), root rotation increment (3) for a free base, then
        the DOFs.
    """
    s = st.positions.shape[0]
    nr = model.n_root
    jac = np.zeros((s, model.n_joints, 3, nr + model.n_dofs), model.dtype)
    if nr:
        d = st.positions - st.root_position[:, None]
        jac[:, :, 0, 0] = jac[:, :, 1, 1] = jac[:, :, 2, 2] = 1.0
        # -[d]x : columns are e_k x d
        jac[:, :, 0, 4], jac[:, :, 0, 5] = d[..., 2], -d[..., 1]
        jac[:, :, 1, 3], jac[:, :, 1, 5] = -d[..., 2], d[..., 0]
        jac[:, :, 2, 3], jac[:, :, 2, 4] = d[..., 1], -d[..., 0]
    if st.chain is not None:
        return _coupled_columns(model, st, jac)
    for i, dofs in enumerate(model.anc_dofs):
        if dofs.size == 0:
            continue
        u = st.axes[:, dofs]
        lever = st.positions[:, i, None] - st.pivots[:, dofs]
        col = np.where((model.dof_type[dofs] == SLIDE)[None, :, None], u, np.cross(u, lever))
        jac[:, i, :, nr + dofs] = col.transpose(1, 0, 2)
    return jac


def _coupled_columns(model: KinematicModel, st: FKState, jac: np.ndarray) -> np.ndarray:
    """DOF columns of a coupled model: chain-weighted step columns summed per DOF."""
    assert st.chain is not None
    s = st.positions.shape[0]
    nr = model.n_root
    steps = np.zeros((s, model.n_joints, 3, model.n_steps), model.dtype)
    for i, idx in enumerate(model.anc_steps):
        if idx.size == 0:
            continue
        u = st.axes[:, idx]
        lever = st.positions[:, i, None] - st.pivots[:, idx]
        col = np.where((model.step_type[idx] == SLIDE)[None, :, None], u, np.cross(u, lever))
        steps[:, i, :, idx] = (col * st.chain[:, idx, None]).transpose(1, 0, 2)
    roots = np.zeros((model.n_steps, model.n_dofs), model.dtype)
    roots[np.arange(model.n_steps), model.step_root] = 1.0
    jac[..., nr:] = steps @ roots
    return jac


def jacobian(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray | None = None,
    root_orientation: np.ndarray | None = None,
) -> np.ndarray:
    """Analytic Jacobians of every keypoint, batched over leading axes.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (..., n_dofs) array
    root_position : (..., 3) array, optional
    root_orientation : (..., 4) array, optional
        ``(w, x, y, z)``.

    Returns
    -------
    (..., n_joints, 3, n_root + n_dofs) array
        ``n_root`` is 6 for a free base (position, then world rotation increment
        ``R <- exp(delta) R``) and 0 for a fixed base.
    """
    model, q, rp, rr, lead = _prepare(plan, dof_values, root_position, root_orientation)
    jac = jacobian_from_state(model, fk_state(model, q, rp, rr))
    return jac.reshape(lead + jac.shape[1:])


def local_rotation_matrices(model: KinematicModel, q: np.ndarray) -> np.ndarray:
    """Each joint's rotation relative to its rest frame (its DOF and driven hinges).

    Parameters
    ----------
    model : KinematicModel
    q : (S, N) array

    Returns
    -------
    (S, J, 3, 3) array
    """
    s = q.shape[0]
    q, _ = step_values(model, q)
    axis = model.step_axis
    out = np.broadcast_to(np.eye(3, dtype=model.dtype), (s, model.n_joints, 3, 3)).copy()
    for lev in model.levels:
        for slot in lev.slots:
            for op, local, dofs, _ in slot:
                joints = lev.joints[local]
                if op in (HINGE, HINGE_ALIGNED):
                    step = axis_angle_matrix(axis[dofs], q[:, dofs])
                elif op == SWING1:
                    sv = q[:, dofs, None] * axis[dofs] + q[:, dofs + 1, None] * axis[dofs + 1]
                    step = expmap(sv)
                else:
                    continue
                out[:, joints] = np.matmul(out[:, joints], step)
    return out


def joint_rotations_local(plan: BodyPlan, dof_values: np.ndarray) -> np.ndarray:
    """Each joint's rotation relative to its rest frame, as quaternions.

    This is the canonical pose of the fit store (``joint_rotation``): the product of the
    joint's own DOF rotations (slides do not rotate), identity for joints without DOFs.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (..., n_dofs) array

    Returns
    -------
    (..., n_joints, 4) array
        Unit quaternions ``(w, x, y, z)`` with ``w >= 0``.
    """
    model, q, _, _, lead = _prepare(plan, dof_values, None, None)
    quat = matrix_to_quat(local_rotation_matrices(model, q))
    return quat.reshape(lead + (plan.n_joints, 4))
