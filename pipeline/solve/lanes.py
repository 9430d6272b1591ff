"""The numpy engine: frames as lanes of one batch, solved in lockstep.

Every numpy call works on all active lanes at once. :func:`frames_in_lanes` solves each
frame independently (from the given start poses); :func:`sequence_in_lanes` cuts the
sequence into segments, runs the segments side by side in lockstep, and warm-starts each
frame from the frame before it (or a constant-velocity prediction); each segment after the
first warms up on ``config.warmup_frames`` frames before its start. A lane whose frame
converges moves on to its next frame at once, so no lane idles while others iterate.
Every mapper (3D, XYView, cameras) runs here; :mod:`pipeline.solve.solver` dispatches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.kinematics.forward import fk_state, local_rotation_matrices
from pipeline.kinematics.rotations import (
    matrix_to_quat,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotvec_to_quat,
)
from pipeline.solve.config import SolverConfig
from pipeline.solve.limits import clamp
from pipeline.solve.normal import solve_normal
from pipeline.solve.problem import Problem, evaluate, kabsch_root
from pipeline.solve.result import FitResult

__all__ = [
    "Pose",
    "cold_pose",
    "empty_pose",
    "finalize",
    "frames_in_lanes",
    "initial_pose",
    "sequence_in_lanes",
]

_BATCH = 1024  # lanes per numpy call in solve_frames (bounds memory)


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


def _apply(prob: Problem, pose: Pose, step: np.ndarray):
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


def _finite(pose: Pose) -> np.ndarray:
    """``(L,)`` bool: every number of the lane's pose is finite."""
    return (
        np.isfinite(pose.q).all(axis=1)
        & np.isfinite(pose.root_pos).all(axis=1)
        & np.isfinite(pose.root_quat).all(axis=1)
    )


def _iterate(prob: Problem, frames: np.ndarray, pose: Pose, lam: np.ndarray):
    """One GN or LM iteration for a batch of lanes.

    A lane whose objective overflows (far targets or huge weights in the working
    precision) or whose step would leave a non-finite pose keeps its pose and is never
    done, so it stops after ``n_iterations`` as not converged, finite.

    Returns
    -------
    pose : Pose
        The new poses (unchanged where an LM step was rejected or the lane overflowed).
    done : (L,) bool
        The lane met its stopping criterion.
    active : (L, N) bool
        Clamp activity of the step taken.
    lam : (L,) array
        Updated damping.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflowing lanes are caught below
        return _iterate_lanes(prob, frames, pose, lam)


def _iterate_lanes(prob: Problem, frames: np.ndarray, pose: Pose, lam: np.ndarray):
    cfg, model = prob.config, prob.model
    ev = evaluate(prob, frames, pose.root_pos, pose.root_quat, pose.q, need_jac=True)
    hj = prob.mapper.jacobian(ev.st.positions)
    step = solve_normal(model, ev.st, ev.residual, ev.weight, hj, pose.q, cfg.neutral_weight, lam)
    new, active, max_pos, max_ang = _apply(prob, pose, step)
    broken = ~(np.isfinite(ev.cost) & _finite(new))
    if broken.any():
        new.put(np.flatnonzero(broken), pose.take(np.flatnonzero(broken)))
        active = active & ~broken[:, None]
    small = (max_pos < cfg.position_tolerance) & (max_ang < cfg.angle_tolerance) & ~broken
    if cfg.mode == "gn":
        return new, small, active, lam
    cand = evaluate(prob, frames, new.root_pos, new.root_quat, new.q, need_jac=False)
    accept = (cand.cost <= ev.cost) & ~broken
    keep = ~accept
    new.root_pos[keep] = pose.root_pos[keep]
    new.root_quat[keep] = pose.root_quat[keep]
    new.q[keep] = pose.q[keep]
    lam = np.where(accept, np.maximum(lam * 0.3, cfg.damping), lam * 10.0)
    stalled = lam > 1e10
    flat = np.abs(ev.cost - cand.cost) <= 1e-14 * np.maximum(ev.cost, 1e-30)
    done = ((accept & small) | stalled | flat) & ~broken
    return new, done, active & accept[:, None], lam


def cold_pose(prob: Problem, frames: np.ndarray) -> Pose:
    """Clamped neutral DOFs, with the root from ``SolverConfig.cold_root``, per frame."""
    model = prob.model
    s = frames.size
    q, _ = clamp(model, np.broadcast_to(model.neutral, (s, model.n_dofs)).astype(model.dtype))
    if prob.config.cold_root == "kabsch":
        root_pos, root_quat = kabsch_root(prob, frames, q[:1])  # one neutral pose for all
    else:
        root_pos = np.zeros((s, 3), model.dtype)
        root_quat = np.zeros((s, 4), model.dtype)
        root_quat[:, 0] = 1.0
    return Pose(root_pos, root_quat, q)


def initial_pose(prob: Problem, initial) -> Pose:
    """Clamped start poses from ``solve_frames(initial=...)`` (a fixed base at the origin)."""
    model = prob.model
    t = prob.n_frames
    get = (lambda k: getattr(initial, k)) if not isinstance(initial, dict) else initial.get
    q = np.broadcast_to(np.asarray(get("dof_values"), model.dtype), (t, model.n_dofs)).copy()
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


def frames_in_lanes(prob: Problem, pose: Pose) -> FitResult:
    """Solve every frame of ``prob`` independently from ``pose`` (one per frame)."""
    config = prob.config
    t = prob.n_frames
    all_frames = np.arange(t)
    iterations = np.zeros(t, np.int32)
    converged = np.zeros(t, bool)
    limit_active = np.zeros((t, prob.plan.n_dofs), bool)
    lam = np.full(
        t, config.damping if config.mode == "gn" else config.lm_initial_damping, prob.model.dtype
    )
    for start in range(0, t, _BATCH):
        todo = all_frames[start : start + _BATCH]
        while todo.size:
            sub = pose.take(todo)
            new, done, active, lam[todo] = _iterate(prob, todo, sub, lam[todo])
            pose.put(todo, new)
            iterations[todo] += 1
            limit_active[todo] = active
            converged[todo] = done
            todo = todo[~done & (iterations[todo] < config.n_iterations)]
    return finalize(prob, pose, iterations, converged, limit_active)


def _segments(t: int, cfg: SolverConfig) -> list[tuple[int, int]]:
    """Contiguous segments, one per lane, as many as allowed.

    Each is at least four warm-up lengths long: wide numpy calls pay more than the
    warm-up frames cost.
    """
    min_len = max(4 * cfg.warmup_frames, 8)
    n = int(max(1, min(cfg.lanes, t // min_len)))
    edges = np.linspace(0, t, n + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def _predict(model, p1: Pose, p2: Pose, n_hist: np.ndarray) -> Pose:
    """Constant-velocity prediction from the last two solutions (or a copy of the last)."""
    two = (n_hist >= 2)[:, None]
    q, _ = clamp(model, np.where(two, 2 * p1.q - p2.q, p1.q), wrap=True)
    root_pos = np.where(two, 2 * p1.root_pos - p2.root_pos, p1.root_pos)
    delta = quat_multiply(p1.root_quat, quat_conjugate(p2.root_quat))
    root_quat = np.where(two, quat_normalize(quat_multiply(delta, p1.root_quat)), p1.root_quat)
    return Pose(root_pos, root_quat.astype(model.dtype), q)


def sequence_in_lanes(prob: Problem) -> FitResult:
    """Solve the frames of ``prob`` as a sequence (module docstring), ``T >= 1``."""
    config, model = prob.config, prob.model
    t = prob.n_frames
    out = empty_pose(model, t)
    iterations = np.zeros(t, np.int32)
    converged = np.zeros(t, bool)
    limit_active = np.zeros((t, model.n_dofs), bool)
    segs = _segments(t, config)
    first = np.array([a for a, _ in segs])
    stop = np.array([b for _, b in segs])
    frame = np.maximum(first - config.warmup_frames, 0)
    n_lanes = len(segs)
    pose = cold_pose(prob, frame)
    prev1 = pose.take(np.arange(n_lanes))
    prev2 = pose.take(np.arange(n_lanes))
    n_hist = np.zeros(n_lanes, np.intp)
    lam0 = config.damping if config.mode == "gn" else config.lm_initial_damping
    lam = np.full(n_lanes, lam0, model.dtype)
    it = np.zeros(n_lanes, np.int32)
    live = np.arange(n_lanes)
    while live.size:
        sub = pose.take(live)
        new, done, active, lam[live] = _iterate(prob, frame[live], sub, lam[live])
        pose.put(live, new)
        it[live] += 1
        fin = done | (it[live] >= config.n_iterations)
        lanes = live[fin]
        if lanes.size:
            f = frame[lanes]
            keep = f >= first[lanes]
            store, fs = lanes[keep], f[keep]
            out.put(fs, pose.take(store))
            iterations[fs] = it[store]
            converged[fs] = done[fin][keep]
            limit_active[fs] = active[fin][keep]
            prev2.put(lanes, prev1.take(lanes))
            prev1.put(lanes, pose.take(lanes))
            n_hist[lanes] += 1
            frame[lanes] += 1
            it[lanes] = 0
            lam[lanes] = lam0
            going = lanes[frame[lanes] < stop[lanes]]
            if going.size:
                hist = n_hist[going] if config.warm_start == "velocity" else 0 * n_hist[going]
                pose.put(going, _predict(model, prev1.take(going), prev2.take(going), hist))
            live = live[~np.isin(live, lanes[frame[lanes] >= stop[lanes]])]
    return finalize(prob, out, iterations, converged, limit_active)


def empty_pose(model, t: int) -> Pose:
    """``t`` poses at the origin, identity rotation, zero DOFs (in ``model.dtype``)."""
    dt = model.dtype
    out = Pose(np.zeros((t, 3), dt), np.zeros((t, 4), dt), np.zeros((t, model.n_dofs), dt))
    out.root_quat[:, 0] = 1.0
    return out


def finalize(prob: Problem, pose: Pose, iterations, converged, limit_active) -> FitResult:
    """Fitted keypoints, residuals and the canonical pose of the solutions."""
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
    return FitResult(
        dof_values=pose.q,
        root_position=pose.root_pos,
        root_orientation=quat_normalize(pose.root_quat),
        joint_rotation=joint_rot,
        fitted_positions=fitted,
        residuals=residuals,
        rms_error=rms,
        max_error=mx,
        iterations=iterations,
        converged=converged,
        limit_active=limit_active,
        observed=observed,
    )
