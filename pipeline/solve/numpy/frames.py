"""The numpy engine: frames as lanes of one batch, solved in lockstep.

Every numpy call works on all active lanes at once. :func:`frames_in_lanes` solves each
frame independently (from the given start poses); :func:`sequence_in_lanes` cuts the
sequence into segments, runs the segments side by side in lockstep, and warm-starts each
frame from the frame before it (or a constant-velocity prediction); each segment after the
first warms up on ``config.warmup_frames`` frames before its start. A lane whose frame
converges moves on to its next frame at once, so no lane idles while others iterate.
Every mapper (3D, XYView, cameras) runs here; :mod:`pipeline.solve.solver` dispatches.
The compiled counterpart is :mod:`pipeline.solve.compiled.frames`; the rules both follow
are :mod:`pipeline.solve.rules`.
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.config import SolverConfig
from pipeline.solve.numpy.forward import evaluate
from pipeline.solve.numpy.normal import solve_normal
from pipeline.solve.numpy.pose import (
    Pose,
    apply_step,
    cold_pose,
    diagnostics,
    empty_pose,
    finite,
    warm_start,
)
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult
from pipeline.solve.rules import (
    MAX_ITERATIONS,
    NO_UPDATE,
    initial_damping,
    lane_rules,
    lane_small_updates,
)

__all__ = ["frames_in_lanes", "sequence_in_lanes"]

_BATCH = 1024  # lanes per numpy call in solve_frames (bounds memory)


def _iterate(prob: Problem, frames: np.ndarray, pose: Pose, lam: np.ndarray, last: np.ndarray):
    """One GN or LM iteration for a batch of lanes.

    ``last`` ``(L, 2)``: each lane's last accepted update (largest position and angle
    change; :data:`~pipeline.solve.rules.NO_UPDATE` for none), updated in place
    (:func:`~pipeline.solve.rules.small_update`).

    A lane whose objective overflows (far targets or huge weights in the working
    precision) or whose step would leave a non-finite pose keeps its pose and is never
    done, so it stops after ``n_iterations`` as stalled, finite.

    Returns
    -------
    pose : Pose
        The new poses (unchanged where an LM step was rejected or the lane overflowed).
    done : (L,) bool
        The lane met its stopping criterion.
    reason : (L,) int8
        The ``stop_reason`` of the lane if it stops now (done, or at the cap).
    active : (L, N) bool
        Clamp activity of the step taken.
    lam : (L,) array
        Updated damping.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflowing lanes are caught below
        return _iterate_lanes(prob, frames, pose, lam, last)


def _iterate_lanes(
    prob: Problem, frames: np.ndarray, pose: Pose, lam: np.ndarray, last: np.ndarray
):
    cfg, model = prob.config, prob.model
    gn = cfg.mode == "gn"
    ev = evaluate(prob, frames, pose.root_pos, pose.root_quat, pose.q, need_jac=True)
    hj = prob.mapper.jacobian(ev.st.positions)
    nw = prob.neutral_weight
    floor = prob.angle_floor
    tasks = None if prob.task_weight is None else (prob.task_weight, prob.task_target[frames])
    step, bound = solve_normal(
        model, ev.st, ev.residual, ev.weight, hj, pose.q, nw, lam, floor, tasks, not gn
    )
    new, active, max_pos, max_ang = apply_step(prob, pose, step)
    active |= bound
    ok = np.isfinite(ev.cost) & finite(new)
    if not ok.all():  # a lane that overflowed keeps its pose
        bad = np.flatnonzero(~ok)
        new.put(bad, pose.take(bad))
    distance = cfg.tolerance_on == "distance"
    small = lane_small_updates(max_pos, max_ang, last, float(prob.position_tolerance),
                               float(cfg.angle_tolerance), distance)  # fmt: skip
    cand = ev.cost
    if not gn:
        cand = evaluate(prob, frames, new.root_pos, new.root_quat, new.q, need_jac=False).cost
    accept, lam, reason, done = lane_rules(
        gn, ok, small, ev.cost, cand, lam, cfg.damping, cfg.cost_tolerance
    )
    last[:, 0] = np.where(accept, max_pos, NO_UPDATE)
    last[:, 1] = np.where(accept, max_ang, NO_UPDATE)
    keep = ~accept & ok  # rejected LM steps (the overflowed lanes are kept already)
    if keep.any():
        new.root_pos[keep] = pose.root_pos[keep]
        new.root_quat[keep] = pose.root_quat[keep]
        new.q[keep] = pose.q[keep]
    return new, done, reason, active & accept[:, None], lam


def frames_in_lanes(prob: Problem, pose: Pose) -> FitResult:
    """Solve every frame of ``prob`` independently from ``pose`` (one per frame)."""
    config = prob.config
    t = prob.n_frames
    all_frames = np.arange(t)
    iterations = np.zeros(t, np.int32)
    stop_reason = np.full(t, MAX_ITERATIONS, np.int8)
    limit_active = np.zeros((t, prob.plan.n_dofs), bool)
    lam0 = initial_damping(config.mode, config.damping, config.lm_initial_damping)
    lam = np.full(t, lam0, prob.model.dtype)
    last = np.full((t, 2), NO_UPDATE)
    for start in range(0, t, _BATCH):
        todo = all_frames[start : start + _BATCH]
        while todo.size:
            sub = pose.take(todo)
            step_last = last[todo]
            new, done, reason, active, lam[todo] = _iterate(prob, todo, sub, lam[todo], step_last)
            last[todo] = step_last
            pose.put(todo, new)
            iterations[todo] += 1
            limit_active[todo] = active
            stop_reason[todo] = reason
            todo = todo[~done & (iterations[todo] < config.n_iterations)]
    return diagnostics(prob, pose, iterations, stop_reason, limit_active)


def _segments(t: int, cfg: SolverConfig) -> list[tuple[int, int]]:
    """Contiguous segments, one per lane, as many as allowed.

    Each is at least four warm-up lengths long: wide numpy calls pay more than the
    warm-up frames cost.
    """
    min_len = max(4 * cfg.warmup_frames, 8)
    n = int(max(1, min(cfg.lanes, t // min_len)))
    edges = np.linspace(0, t, n + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def sequence_in_lanes(prob: Problem) -> FitResult:
    """Solve the frames of ``prob`` as a sequence (module docstring), ``T >= 1``."""
    config, model = prob.config, prob.model
    t = prob.n_frames
    out = empty_pose(model, t)
    iterations = np.zeros(t, np.int32)
    stop_reason = np.full(t, MAX_ITERATIONS, np.int8)
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
    lam0 = initial_damping(config.mode, config.damping, config.lm_initial_damping)
    lam = np.full(n_lanes, lam0, model.dtype)
    last = np.full((n_lanes, 2), NO_UPDATE)
    it = np.zeros(n_lanes, np.int32)
    live = np.arange(n_lanes)
    while live.size:
        sub = pose.take(live)
        step_last = last[live]
        new, done, reason, active, lam[live] = _iterate(
            prob, frame[live], sub, lam[live], step_last
        )
        last[live] = step_last
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
            stop_reason[fs] = reason[fin][keep]
            limit_active[fs] = active[fin][keep]
            prev2.put(lanes, prev1.take(lanes))
            prev1.put(lanes, pose.take(lanes))
            n_hist[lanes] += 1
            frame[lanes] += 1
            it[lanes] = 0
            lam[lanes] = lam0
            last[lanes] = NO_UPDATE
            going = lanes[frame[lanes] < stop[lanes]]
            if going.size:
                hist = n_hist[going] if config.warm_start == "velocity" else 0 * n_hist[going]
                pose.put(going, warm_start(model, prev1.take(going), prev2.take(going), hist))
            live = live[~np.isin(live, lanes[frame[lanes] >= stop[lanes]])]
    return diagnostics(prob, out, iterations, stop_reason, limit_active)
