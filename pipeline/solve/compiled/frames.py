"""The compiled per-frame Gauss-Newton / Levenberg-Marquardt loop.

Semantics are the numpy engine's (:mod:`pipeline.solve.numpy.frames`), one frame at a
time, under the rules of :mod:`pipeline.solve.rules` (its accept, damping and stop
functions, shared with the numpy engine and the projection kernel): QuickIK's damped
Gauss-Newton step with the neutral prior (:func:`.loop.damp_system`), clamp on write, no
step for a singular system. A sequence runs frame after frame, each
starting from the previous solution (or a constant-velocity prediction) with unbounded
angles wrapped, so no warm-up frames are needed. Arithmetic is float64 whatever the
caller's dtype: scalar code gains nothing from float32.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.bundles import Inputs, Outputs, Settings, Workspace
from pipeline.solve.compiled.compilers import NOREFCOUNT_JIT
from pipeline.solve.compiled.forward import advance_half_angles, fk, fk_half, half_angles, objective
from pipeline.solve.compiled.loop import damp_system, hold_step, start_pose, task_row
from pipeline.solve.compiled.normal import assemble, solve_tree
from pipeline.solve.compiled.pose import (
    apply_step,
    copy,
    diagnostics,
    fill,
    kabsch_start,
    local_quats,
)
from pipeline.solve.compiled.precision import frame_precision
from pipeline.solve.compiled.so3 import quat_to_matrix
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import (
    INLINE,
    MAX_ITERATIONS,
    NO_OBSERVATIONS,
    NO_UPDATE,
    accepts,
    next_damping,
    small_update,
    stop_reason,
)

__all__ = ["finish_frame", "solve_frames_kernel", "start_frame"]


@nb.njit(**INLINE)
def start_frame(
    tb: Tables, inp: Inputs, cfg: Settings, ws: Workspace, out: Outputs, t: int
) -> None:
    """:func:`.loop.start_pose`, then a rigid fit of a cold start's root (``cfg.kabsch``)."""
    i0 = start_pose(tb, inp, cfg, ws, out, t)
    if i0 >= 0 and cfg.kabsch and tb.n_root:
        if ws.local_of[0] != i0:  # keypoints of this start pose, root at the origin
            fk(tb, ws.q, ws.origin, ws.eye, False, ws.rot, ws.org, ws.local, ws.axes,
               ws.pivots, ws.tmp, ws.half)  # fmt: skip
            ws.local_of[0] = i0
        kabsch_start(ws.local, inp.obs[t], inp.weight[t], ws.rp, ws.rq)


@nb.njit(**INLINE)
def finish_frame(
    tb: Tables,
    inp: Inputs,
    cfg: Settings,
    ws: Workspace,
    out: Outputs,
    t: int,
    q: np.ndarray,
    rp: np.ndarray,
    rq: np.ndarray,
    act: np.ndarray,
    half: np.ndarray,
    it: int,
    reason: int,
    prior_tasks: np.ndarray,
    fresh: bool,
) -> None:
    """Write frame ``t``'s solution and its diagnostics into ``out``.

    ``q``, ``rp``, ``rq``, ``act``, ``half`` are the solved pose, its clamp activity and
    its half angles (any buffers; ``ws``' forward-pass buffers are overwritten), ``it``
    and ``reason`` the iterations taken and the stop reason; ``prior_tasks`` the
    uncertainty's prior diagonal ``(N,)``. ``fresh``: ``ws.pos``, ``ws.axes`` and
    ``ws.pivots`` already hold the forward pass of this pose with its screws (an LM
    frame's last step was accepted), which is then not run again.
    """
    nw, loss, scale = cfg.neutral_weight, cfg.loss, cfg.loss_scale
    obs_t, w_t, tt, tw = inp.obs[t], inp.weight[t], task_row(inp, t), inp.task_weight
    root_rot = ws.root_rot
    copy(q, out.dof_value[t])
    copy(rp, out.root_position[t])
    copy(rq, out.root_orientation[t])
    out.iterations[t] = it
    copy(act, out.limit_active[t])
    quat_to_matrix(rq, root_rot)
    fit = out.fitted_position[t]
    if fresh:
        pos = ws.pos
        for j in range(fit.shape[0]):
            for i in range(3):
                fit[j, i] = pos[j, i]
    else:
        fk_half(tb, q, half, rp, root_rot, cfg.uncertainty, ws.rot, ws.org, fit, ws.axes,
                ws.pivots, ws.tmp)  # fmt: skip
    local_quats(tb, q, out.joint_rotation[t], half)
    stats = out.stats[t]
    diagnostics(fit, obs_t, w_t, out.residual[t], stats)
    stats[3] = objective(tb, fit, obs_t, w_t, q, nw, loss, scale, ws.res, ws.weff, tw, tt)
    if cfg.uncertainty:
        frame_precision(tb, ws, out, t, prior_tasks)
    out.stop_reason[t] = NO_OBSERVATIONS if stats[2] == 0 else reason


@nb.njit(**NOREFCOUNT_JIT)
def solve_frames_kernel(tb: Tables, inp: Inputs, cfg: Settings, ws: Workspace, out: Outputs):
    """Solve the frames of ``inp`` one after another into ``out``.

    Parameters
    ----------
    tb : Tables
    inp : Inputs
        Targets, weights and start poses; ``inp.cold`` marks the frames that start from
        ``init_*`` when ``cfg.chained`` (the others start from the solution before them).
    cfg : Settings
    ws : Workspace
        Scratch, overwritten.
    out : Outputs
        Filled for every frame: the pose, iterations, ``stop_reason``
        (:data:`~pipeline.solve.rules.STOP_REASONS`), the last step's clamp activity,
        keypoints, local joint rotations, residuals, ``stats`` (RMS, largest
        residual, observed keypoints, objective) and, with ``cfg.uncertainty``, the
        uncertainty inputs at the solution
        (:func:`~pipeline.solve.compiled.precision.frame_precision`).
    """
    tw = inp.task_weight
    prior, prior_tasks = ws.prior[0], ws.prior[1]  # filled here: the kernel allocates nothing
    for k in range(prior.shape[0]):
        prior[k] = cfg.neutral_weight * tb.prior_scale[k]
        prior_tasks[k] = prior[k] + tw[k]  # the uncertainty's prior diagonal
    nw, loss, scale, gn = cfg.neutral_weight, cfg.loss, cfg.loss_scale, cfg.gn
    rot, org, pos, axes, pivots, tmp = ws.rot, ws.org, ws.pos, ws.axes, ws.pivots, ws.tmp
    res, weff, root_rot = ws.res, ws.weff, ws.root_rot
    for t in range(inp.weight.shape[0]):
        start_frame(tb, inp, cfg, ws, out, t)
        q, rp, rq, act = ws.q, ws.rp, ws.rq, ws.act
        q_new, rp_new, rq_new, act_new = ws.q_new, ws.rp_new, ws.rq_new, ws.act_new
        obs_t, w_t, tt = inp.obs[t], inp.weight[t], task_row(inp, t)
        half, half_new = ws.half, ws.half_new
        half_angles(q, half)
        lam = cfg.lam0
        fill(act, False)
        reason = MAX_ITERATIONS
        it = 0
        cost = 0.0
        fresh = False  # the forward pass and objective of q are in place (an accepted step's)
        last_pos = last_ang = NO_UPDATE  # the last accepted update (small_update)
        while it < cfg.n_iterations:
            it += 1
            if not fresh:
                quat_to_matrix(rq, root_rot)
                fk_half(tb, q, half, rp, root_rot, True, rot, org, pos, axes, pivots, tmp)
                cost = objective(tb, pos, obs_t, w_t, q, nw, loss, scale, res, weff, tw, tt)
            assemble(tb, pos, axes, pivots, rp, res, weff, ws.mom, ws.xi, ws.hd, ws.hc, ws.hr,
                     ws.g)  # fmt: skip
            damp_system(tb, ws.hd, ws.g, q, prior, lam, cfg.angle_floor, tw, tt, act_new,
                        not gn)  # fmt: skip
            solve_tree(tb, ws.hd, ws.hc, ws.hr, ws.g, ws.step)  # a failed system: a zero step
            hold_step(tb, ws.step, act_new)
            max_pos, max_ang, finite = apply_step(
                tb, q, rp, rq, ws.step, q_new, rp_new, rq_new, act_new
            )
            advance_half_angles(q, q_new, half, half_new)
            ok = finite and math.isfinite(cost)
            small = small_update(max_pos, max_ang, last_pos, last_ang, cfg.position_tolerance,
                                 cfg.angle_tolerance, cfg.distance)  # fmt: skip
            cand = cost
            tried = ok and not gn
            if tried:  # with the screws: an accepted step's next iteration starts from them
                quat_to_matrix(rq_new, root_rot)
                fk_half(tb, q_new, half_new, rp_new, root_rot, True, rot, org, pos, axes,
                        pivots, tmp)  # fmt: skip
                cand = objective(tb, pos, obs_t, w_t, q_new, nw, loss, scale, res, weff, tw,
                                 tt)  # fmt: skip
            accepted = accepts(gn, ok, cost, cand)
            lam = next_damping(gn, lam, accepted, cfg.damping)
            reason, done = stop_reason(gn, ok, small, accepted, cost, cand, lam,
                                       cfg.cost_tolerance)  # fmt: skip
            if accepted:
                q, q_new = q_new, q
                rp, rp_new = rp_new, rp
                rq, rq_new = rq_new, rq
                act, act_new = act_new, act
                half, half_new = half_new, half
                cost = cand
                last_pos, last_ang = max_pos, max_ang
            else:
                fill(act, False)  # the pose is kept
                last_pos = last_ang = NO_UPDATE
            fresh = accepted and tried
            if done:
                break
        finish_frame(tb, inp, cfg, ws, out, t, q, rp, rq, act, half, it, reason, prior_tasks,
                     fresh)  # fmt: skip
