"""Poses of the numpy engine: clamp, step, starts and the fit diagnostics.

The numpy counterpart of :mod:`pipeline.solve.compiled.pose`, for a batch of lanes at
once; the rules they share are :mod:`pipeline.solve.rules`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.kinematics.fk_jacobian import fk_state, local_rotation_matrices
from pipeline.kinematics.plan_arrays import KinematicModel
from pipeline.kinematics.rotations import (
    matrix_to_quat,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotvec_to_quat,
)
from pipeline.solve.numpy.forward import evaluate
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult
from pipeline.solve.rules import (
    BALL_SLACK_ULPS,
    CONVERGED,
    KABSCH_MIN_KEYPOINTS,
    KABSCH_RANK_RTOL,
    NO_OBSERVATIONS,
)

__all__ = [
    "Pose",
    "apply_step",
    "clamp",
    "cold_pose",
    "diagnostics",
    "empty_pose",
    "finite",
    "initial_pose",
    "kabsch_start",
    "warm_start",
]


@dataclass
class Pose:
    """Mutable pose arrays of a set of lanes."""

    root_pos: np.ndarray  # (L, 3)
    root_quat: np.ndarray  # (L, 4)
    q: np.ndarray  # (L, N)

    def take(self, idx: np.ndarray) -> Pose:
        """The lanes ``idx`` (copies)."""
        return Pose(self.root_pos[idx], self.root_quat[idx], self.q[idx])

    def put(self, idx: np.ndarray, other: Pose) -> None:
        """Write ``other`` into the lanes ``idx``."""
        self.root_pos[idx] = other.root_pos
        self.root_quat[idx] = other.root_quat
        self.q[idx] = other.q


def clamp(
    model: KinematicModel, q: np.ndarray, wrap: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Clamp DOF values to their limits, in place of ``q``'s copy.

    Box limits clip each coordinate. With ``wrap``, an unbounded angle (a hinge or twist
    without limits) is wrapped into ``neutral +- pi``: the same rotation, so sequences
    cannot wind up by whole turns (the solver wraps when it starts a frame, never inside
    one, where the neutral prior is not periodic). A ball joint's swing rotation vector is
    first
    wrapped to an angle of at most pi (the same rotation), then projected radially onto
    its elliptical cone ``(s1 / a1)^2 + (s2 / a2)^2 <= 1``.

    Parameters
    ----------
    model : KinematicModel
    q : (S, N) array
    wrap : bool
        Wrap unbounded angles into ``neutral +- pi``.

    Returns
    -------
    q : (S, N) array
        Clamped values.
    active : (S, N) bool array
        True where the clamp moved the value.
    """
    out = np.clip(q, model.lower, model.upper)
    active = out != q
    free = model.free_angles
    if wrap and free.size:
        rel = out[:, free] - model.neutral[free]
        out[:, free] = model.neutral[free] + (rel + np.pi) % (2 * np.pi) - np.pi
    if model.ball_swing.size:
        sw = out[:, model.ball_swing]  # (S, nb, 2)
        theta = np.sqrt(np.sum(sw * sw, axis=-1, keepdims=True))
        wrap = theta > np.pi
        sw = np.where(wrap, sw * (theta - 2 * np.pi) / np.where(wrap, theta, 1.0), sw)
        cone = model.ball_cone
        e = np.sum((sw / cone) ** 2, axis=-1, keepdims=True)
        # a tolerance of a few ulps keeps the projection idempotent under round-off
        outside = e > 1.0 + BALL_SLACK_ULPS * np.finfo(out.dtype).eps
        sw = np.where(outside, sw / np.sqrt(np.where(outside, e, 1.0)), sw)
        out[:, model.ball_swing] = sw
        active[:, model.ball_swing] |= outside
    return out, active


def apply_step(prob: Problem, pose: Pose, step: np.ndarray):
    """Pose after ``step`` and clamping; also the applied update sizes."""
    model = prob.model
    nr = model.n_root
    q_new, active = clamp(model, pose.q + step[:, nr:])
    dq = np.abs(q_new - pose.q)
    max_pos = np.max(dq, axis=1, where=~model.angular, initial=0.0)
    max_ang = np.max(dq, axis=1, where=model.angular, initial=0.0)
    if nr:
        root_pos = pose.root_pos + step[:, :3]
        root_quat = quat_normalize(quat_multiply(rotvec_to_quat(step[:, 3:6]), pose.root_quat))
        max_pos = np.maximum(max_pos, np.max(np.abs(step[:, :3]), axis=1))
        max_ang = np.maximum(max_ang, np.linalg.norm(step[:, 3:6], axis=1))
    else:
        root_pos, root_quat = pose.root_pos, pose.root_quat
    return Pose(root_pos, root_quat.astype(model.dtype), q_new), active, max_pos, max_ang


def finite(pose: Pose) -> np.ndarray:
    """``(L,)`` bool: every number of the lane's pose is finite."""
    return (
        np.isfinite(pose.q).all(axis=1)
        & np.isfinite(pose.root_pos).all(axis=1)
        & np.isfinite(pose.root_quat).all(axis=1)
    )


def cold_pose(prob: Problem, frames: np.ndarray) -> Pose:
    """Clamped neutral DOFs, with the root from ``SolverConfig.cold_root``, per frame.

    With ``cold_root="kabsch"``, that pose is then refined by ``prob.cold_refine`` where
    the front end set one (through two or more calibrated cameras: the 3D fit of the
    keypoints the views triangulate, :func:`pipeline.solve.dispatch.triangulated_start`).
    """
    model = prob.model
    s = frames.size
    q, _ = clamp(model, np.broadcast_to(model.neutral, (s, model.n_dofs)).astype(model.dtype))
    if prob.config.cold_root == "kabsch":
        root_pos, root_quat = kabsch_start(prob, frames, q[:1])  # one neutral pose for all
    else:
        root_pos = np.zeros((s, 3), model.dtype)
        root_quat = np.zeros((s, 4), model.dtype)
        root_quat[:, 0] = 1.0
    pose = Pose(root_pos, root_quat, q)
    if prob.config.cold_root == "kabsch" and prob.cold_refine is not None:
        pose = prob.cold_refine(prob, frames, pose)
    return pose


def initial_pose(prob: Problem, initial) -> Pose:
    """Clamped start poses from ``solve_frames(initial=...)`` (a fixed base at the origin)."""
    model = prob.model
    t = prob.n_frames
    get = (lambda k: getattr(initial, k)) if not isinstance(initial, dict) else initial.get
    q = np.broadcast_to(np.asarray(get("dof_value"), model.dtype), (t, model.n_dofs)).copy()
    rp = get("root_position")
    rq = get("root_orientation")
    root_pos = (
        np.zeros((t, 3), model.dtype)
        if rp is None
        else np.broadcast_to(np.asarray(rp, model.dtype), (t, 3)).copy()
    )
    root_quat = np.broadcast_to(np.array([1.0, 0, 0, 0], model.dtype), (t, 4)).copy()
    if rq is not None:
        root_quat = quat_normalize(np.broadcast_to(np.asarray(rq, model.dtype), (t, 4))).copy()
    if not model.free_base:  # a fixed base sits at the origin, whatever was passed
        root_pos[:] = 0.0
        root_quat[:] = [1.0, 0.0, 0.0, 0.0]
    q, _ = clamp(model, q)
    return Pose(root_pos, root_quat, q)


def warm_start(model, p1: Pose, p2: Pose, n_hist: np.ndarray) -> Pose:
    """Constant-velocity prediction from the last two solutions (or a copy of the last)."""
    two = (n_hist >= 2)[:, None]
    q, _ = clamp(model, np.where(two, 2 * p1.q - p2.q, p1.q), wrap=True)
    root_pos = np.where(two, 2 * p1.root_pos - p2.root_pos, p1.root_pos)
    delta = quat_multiply(p1.root_quat, quat_conjugate(p2.root_quat))
    root_quat = np.where(two, quat_normalize(quat_multiply(delta, p1.root_quat)), p1.root_quat)
    return Pose(root_pos, root_quat.astype(model.dtype), q)


def kabsch_start(prob: Problem, frames: np.ndarray, q: np.ndarray):
    """Rigid fit of the pose ``q`` (root at identity) onto the observed 3D keypoints.

    ``q`` is ``(S, N)``, or ``(1, N)`` for one pose fitted to every frame.

    Frames with fewer than three observed keypoints get the identity rotation and a
    translation matching the observed centroid (or the origin when none is observed).

    Returns
    -------
    root_pos : (S, 3)
    root_quat : (S, 4)
    """
    model = prob.model
    s = frames.size
    dt = model.dtype
    pos = np.zeros((s, 3), dt)
    quat = np.zeros((s, 4), dt)
    quat[:, 0] = 1.0
    world = prob.mapper.world_targets(prob.obs[frames], prob.weight[frames])  # 3D, DLT, ...
    if not model.free_base or world is None:
        return pos, quat
    # float64 throughout: products of far float32 targets overflow the working precision
    local = fk_state(model, q, need_axes=False).positions.astype(np.float64)
    local = np.broadcast_to(local, (s, *local.shape[1:]))  # (S, J, 3)
    target, w = world
    wsum = w.sum(axis=1)
    has = (wsum > 0) & np.isfinite(wsum)
    wn = w / np.where(has, wsum, 1.0)[:, None]
    c_local = np.einsum("sj,sjk->sk", wn, local)
    c_target = np.einsum("sj,sjk->sk", wn, target)
    h = np.einsum("sj,sja,sjb->sab", wn, local - c_local[:, None], target - c_target[:, None])
    finite = has & np.isfinite(h).all(axis=(1, 2)) & np.isfinite(c_target).all(axis=1)
    h = np.where(finite[:, None, None], h, np.eye(3))  # SVD raises on non-finite input
    u, sv, vt = np.linalg.svd(h)
    det = np.sign(np.linalg.det(np.matmul(u, vt)))
    fix = np.ones((s, 3))
    fix[:, 2] = det
    rot = np.matmul(vt.transpose(0, 2, 1) * fix[:, None, :], u.transpose(0, 2, 1))
    enough = ((w > 0).sum(axis=1) >= KABSCH_MIN_KEYPOINTS) & (
        sv[:, 1] > KABSCH_RANK_RTOL * np.maximum(sv[:, 0], 1e-30)
    )
    rot = np.where((finite & enough)[:, None, None], rot, np.eye(3))
    quat = matrix_to_quat(rot).astype(dt)
    pos = np.where(finite[:, None], c_target - np.einsum("sab,sb->sa", rot, c_local), 0.0)
    big = np.finfo(dt).max
    return np.clip(pos, -big, big).astype(dt), quat


def empty_pose(model, t: int) -> Pose:
    """``t`` poses at the origin, identity rotation, zero DOFs (in ``model.dtype``)."""
    dt = model.dtype
    out = Pose(np.zeros((t, 3), dt), np.zeros((t, 4), dt), np.zeros((t, model.n_dofs), dt))
    out.root_quat[:, 0] = 1.0
    return out


def diagnostics(prob: Problem, pose: Pose, iterations, stop_reason, limit_active) -> FitResult:
    """Fitted keypoints, residuals, objective and the canonical pose of the solutions.

    ``stop_reason`` is the loop's; frames without an observed keypoint report
    ``no_observations`` instead.
    """
    model, plan = prob.model, prob.plan
    t = prob.n_frames
    nj = plan.n_joints
    dt = model.dtype
    fitted = np.empty((t, nj, 3), dt)
    residuals = np.full((t, nj), np.nan, dt)
    rms = np.zeros(t, dt)
    mx = np.zeros(t, dt)
    observed = np.zeros(t, np.int32)
    joint_rot = np.empty((t, nj, 4), dt)
    objective = np.zeros(t, dt)
    big = np.finfo(dt).max  # far but finite residuals stay finite in the working precision
    for a in range(0, t, 4096):
        idx = np.arange(a, min(a + 4096, t))
        free = model.free_base
        rot = quat_to_matrix(pose.root_quat[idx]) if free else None
        st = fk_state(
            model, pose.q[idx], pose.root_pos[idx] if free else None, rot, need_axes=False
        )
        fitted[idx] = st.positions
        # diagnostics in float64: squared float32 residuals of far targets overflow
        r = prob.obs[idx].astype(np.float64) - prob.mapper.project(st.positions)
        seen = (prob.weight[idx] > 0) & np.isfinite(r).all(axis=-1)  # (S, C, J)
        d2 = np.where(seen, np.sum(np.where(seen[..., None], r, 0.0) ** 2, axis=-1), 0.0)
        nviews = seen.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            res = np.where(nviews > 0, np.sqrt(d2.sum(axis=1) / nviews), np.nan)
            residuals[idx] = np.minimum(res, big)
        count = seen.sum(axis=(1, 2))
        observed[idx] = count
        rms[idx] = np.minimum(np.sqrt(d2.sum(axis=(1, 2)) / np.maximum(count, 1)), big)
        mx[idx] = np.minimum(np.sqrt(d2.max(axis=(1, 2), initial=0.0)), big)
        joint_rot[idx] = matrix_to_quat(local_rotation_matrices(model, pose.q[idx]))
        with np.errstate(over="ignore", invalid="ignore"):
            ev = evaluate(prob, idx, pose.root_pos[idx], pose.root_quat[idx], pose.q[idx], False)
            objective[idx] = np.minimum(ev.cost, big)
    stop_reason = np.where(observed == 0, NO_OBSERVATIONS, stop_reason).astype(np.int8)
    return FitResult(
        dof_value=pose.q,
        root_position=pose.root_pos,
        root_orientation=quat_normalize(pose.root_quat),
        joint_rotation=joint_rot,
        fitted_position=fitted,
        residual=residuals,
        rms_error=rms,
        max_error=mx,
        iterations=iterations,
        converged=stop_reason == CONVERGED,
        stop_reason=stop_reason,
        objective=objective,
        limit_active=limit_active,
        observed=observed,
    )
