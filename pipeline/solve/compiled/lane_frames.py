"""The frame loop of :mod:`.frames` solving :data:`~.lane_forward.LANES` sequences at once.

A call's frames form independent *sequences*: each starts cold (``Inputs.cold``, or every
frame when the solve is not chained) and runs warm to the next. Sequences are dealt to
lanes as lanes come free; every lane runs one Gauss-Newton / Levenberg-Marquardt
iteration of its current frame per pass, with its own damping, cost and stop decision
(:mod:`pipeline.solve.rules`), and when its frame stops, the frame is written out by the
scalar kernel's own :func:`.frames.finish_frame` and the lane goes on to the next frame
of its sequence, or to the next sequence. Starting a frame and finishing one run once per
frame, lane by lane, with the scalar code; the iterations run in :mod:`.lane_forward`,
:mod:`.lane_normal` and :mod:`.lane_step`. A frame's numbers are therefore the scalar
kernel's exactly, whichever lane solves it and whatever the other lanes hold.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.bundles import Inputs, Outputs, Settings, Workspace
from pipeline.solve.compiled.compilers import NOALIAS_JIT
from pipeline.solve.compiled.frames import finish_frame, start_frame
from pipeline.solve.compiled.lane_bundles import LaneWorkspace
from pipeline.solve.compiled.lane_forward import LANES, fk_lanes, objective_lanes
from pipeline.solve.compiled.lane_normal import assemble_lanes, damp_lanes, solve_tree_lanes
from pipeline.solve.compiled.lane_step import advance_half_lanes, apply_step_lanes
from pipeline.solve.compiled.loop import task_row
from pipeline.solve.compiled.so3 import quat_to_matrix
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import (
    INLINE,
    MAX_ITERATIONS,
    NO_UPDATE,
    accepts,
    next_damping,
    small_update,
    stop_reason,
)

__all__ = ["solve_lanes_kernel"]


# rows of LaneWorkspace.lane
_FRAME, _END, _IT, _LAM, _COST, _CAND, _MAXP, _MAXA, _SEQ, _REASON, _INV, _LK = range(12)
_LASTP, _LASTA = 12, 13  # the last accepted update's (small_update)
# rows of LaneWorkspace.ok
_BUSY, _FRESH, _FINITE, _SOLVED, _ACCEPTED, _DONE = range(6)


@nb.njit(**INLINE)
def _keep_accepted(lw: LaneWorkspace) -> None:
    """Each lane's candidate becomes its pose where its step was accepted.

    Elsewhere the lane's clamp activity is cleared: the scalar loop's swap and ``fill``,
    all lanes at once. (Every array is taken out of its bundle once: an attribute read
    inside a loop costs a reference-count update per pass.)
    """
    acc = lw.ok[_ACCEPTED]
    q, q_new, act, act_new = lw.q, lw.q_new, lw.act, lw.act_new
    half, half_new, rp, rp_new, rq, rq_new = (
        lw.half,
        lw.half_new,
        lw.rp,
        lw.rp_new,
        lw.rq,
        lw.rq_new,
    )
    nl = acc.shape[0]
    for k in range(q.shape[0]):
        for ln in range(nl):
            a = acc[ln]
            q[k, ln] = q_new[k, ln] if a else q[k, ln]
            act[k, ln] = act_new[k, ln] if a else False
            half[0, k, ln] = half_new[0, k, ln] if a else half[0, k, ln]
            half[1, k, ln] = half_new[1, k, ln] if a else half[1, k, ln]
    for i in range(3):
        for ln in range(nl):
            rp[i, ln] = rp_new[i, ln] if acc[ln] else rp[i, ln]
    for i in range(4):
        for ln in range(nl):
            rq[i, ln] = rq_new[i, ln] if acc[ln] else rq[i, ln]


@nb.njit(**INLINE)
def _root_frames(rq: np.ndarray, root_rot: np.ndarray, scratch: np.ndarray, rot3: np.ndarray):
    """Each lane's root rotation matrix ``root_rot`` ``(9, L)`` of its quaternion ``rq``."""
    for ln in range(rq.shape[1]):
        for i in range(4):
            scratch[i] = rq[i, ln]
        quat_to_matrix(scratch, rot3)
        for i in range(9):
            root_rot[i, ln] = rot3[i // 3, i % 3]


@nb.njit(**INLINE)
def _load(tb: Tables, inp: Inputs, cfg: Settings, ws: Workspace, out: Outputs,
          lw: LaneWorkspace, ln: int, t: int) -> None:  # fmt: skip
    """Start frame ``t`` in lane ``ln``: the scalar start pose, its targets, a fresh state."""
    start_frame(tb, inp, cfg, ws, out, t)
    tt = task_row(inp, t)
    q0, rp0, rq0 = ws.q, ws.rp, ws.rq
    q, half, act, target = lw.q, lw.half, lw.act, lw.task_target
    for k in range(q0.shape[0]):
        v = q0[k]
        q[k, ln] = v
        half[0, k, ln] = math.cos(0.5 * v)
        half[1, k, ln] = math.sin(0.5 * v)
        act[k, ln] = False
        target[k, ln] = tt[k]
    rp, rq = lw.rp, lw.rq
    for i in range(3):
        rp[i, ln] = rp0[i]
    for i in range(4):
        rq[i, ln] = rq0[i]
    obs_t, w_t, obs, weight = inp.obs[t], inp.weight[t], lw.obs, lw.weight
    for j in range(w_t.shape[0]):
        weight[j, ln] = w_t[j]
        for i in range(3):
            obs[j, i, ln] = obs_t[j, i]
    lane = lw.lane
    lane[_FRAME, ln] = t
    lane[_IT, ln] = 0
    lane[_LAM, ln] = cfg.lam0
    lane[_LASTP, ln] = lane[_LASTA, ln] = NO_UPDATE
    lane[_COST, ln] = 0.0
    lane[_REASON, ln] = MAX_ITERATIONS
    lw.ok[_FRESH, ln] = False
    lw.ok[_DONE, ln] = False


@nb.njit(**INLINE)
def _finish(tb: Tables, inp: Inputs, cfg: Settings, ws: Workspace, out: Outputs,
            lw: LaneWorkspace, ln: int, prior_tasks: np.ndarray) -> None:  # fmt: skip
    """Write lane ``ln``'s frame out through the scalar :func:`.frames.finish_frame`."""
    q, act, half, rp, rq = ws.q, ws.act, ws.half, ws.rp, ws.rq
    lq, lact, lhalf, lrp, lrq = lw.q, lw.act, lw.half, lw.rp, lw.rq
    for k in range(q.shape[0]):
        q[k] = lq[k, ln]
        act[k] = lact[k, ln]
        half[0, k] = lhalf[0, k, ln]
        half[1, k] = lhalf[1, k, ln]
    for i in range(3):
        rp[i] = lrp[i, ln]
    for i in range(4):
        rq[i] = lrq[i, ln]
    lane = lw.lane
    t = int(lane[_FRAME, ln])
    it, reason = int(lane[_IT, ln]), int(lane[_REASON, ln])
    finish_frame(tb, inp, cfg, ws, out, t, q, rp, rq, act, half, it, reason, prior_tasks,
                 False)  # fmt: skip


@nb.njit(**INLINE)
def _next(tb: Tables, inp: Inputs, cfg: Settings, ws: Workspace, out: Outputs,
          lw: LaneWorkspace, ln: int, starts: np.ndarray, queue: int) -> int:  # fmt: skip
    """Move lane ``ln`` to its sequence's next frame, else to sequence ``queue``.

    Returns the next sequence still to deal; a lane with nothing left goes idle.
    """
    t = int(lw.lane[_FRAME, ln]) + 1
    if lw.ok[_BUSY, ln] and t < lw.lane[_END, ln]:
        _load(tb, inp, cfg, ws, out, lw, ln, t)
        return queue
    if queue < starts.shape[0] - 1:
        lw.lane[_END, ln] = starts[queue + 1]
        lw.ok[_BUSY, ln] = True
        _load(tb, inp, cfg, ws, out, lw, ln, int(starts[queue]))
        return queue + 1
    lw.ok[_BUSY, ln] = False
    return queue


@nb.njit(**NOALIAS_JIT)
def solve_lanes_kernel(
    tb: Tables,
    inp: Inputs,
    cfg: Settings,
    ws: Workspace,
    lw: LaneWorkspace,
    out: Outputs,
    starts: np.ndarray,
) -> None:
    """:func:`.frames.solve_frames_kernel` with the sequences solved in lanes.

    Parameters
    ----------
    tb : Tables
        Of a plan without driven axes.
    inp, cfg, ws, out
        As :func:`~.frames.solve_frames_kernel` takes them (``cfg.n_iterations >= 1``);
        ``ws`` is used to start and finish frames.
    lw : LaneWorkspace
        Lane scratch, overwritten.
    starts : (S + 1,) int64
        :func:`sequence_starts` of ``inp.cold``.
    """
    tw = inp.task_weight
    prior, prior_tasks = ws.prior[0], ws.prior[1]  # filled here: the kernel allocates nothing
    for k in range(prior.shape[0]):
        prior[k] = cfg.neutral_weight * tb.prior_scale[k]
        prior_tasks[k] = prior[k] + tw[k]
    nw, loss, scale, gn = cfg.neutral_weight, cfg.loss, cfg.loss_scale, cfg.gn
    lane, ok = lw.lane, lw.ok
    # every array out of its bundle once (a read inside the loop costs a refcount update)
    q, rp, rq, half, q_new, rp_new, rq_new, half_new = (
        lw.q,
        lw.rp,
        lw.rq,
        lw.half,
        lw.q_new,
        lw.rp_new,
        lw.rq_new,
        lw.half_new,
    )
    act_new, obs, weight, target, sums = lw.act_new, lw.obs, lw.weight, lw.task_target, lw.sums
    root_rot, rot3, rot, org, pos, axes, pivots = (
        lw.root_rot,
        lw.rot3,
        lw.rot,
        lw.org,
        lw.pos,
        lw.axes,
        lw.pivots,
    )
    r, o, tmp, res, weff, own, mom, xi, f = (
        lw.r,
        lw.o,
        ws.tmp,
        lw.res,
        lw.weff,
        lw.own,
        lw.mom,
        lw.xi,
        lw.f,
    )
    hd, hc, hr, g, step = lw.hd, lw.hc, lw.hr, lw.g, lw.step
    for ln in range(LANES):  # every lane starts done with nothing: the loop deals
        ok[_BUSY, ln] = False
        ok[_DONE, ln] = True
        lane[_FRAME, ln] = -1
    queue = 0
    while True:
        busy = 0
        for ln in range(LANES):  # lanes whose frame stopped write it out and move on
            if ok[_DONE, ln]:
                if ok[_BUSY, ln]:
                    _finish(tb, inp, cfg, ws, out, lw, ln, prior_tasks)
                queue = _next(tb, inp, cfg, ws, out, lw, ln, starts, queue)
            busy += ok[_BUSY, ln]
        if not busy:
            break
        stale = False
        for ln in range(LANES):
            lane[_IT, ln] += 1
            stale = stale or not ok[_FRESH, ln]
        if stale:  # a fresh lane's numbers come out the same again
            _root_frames(rq, root_rot, ws.rq, rot3)
            fk_lanes(tb, q, half, rp, root_rot, True, rot, org, pos, axes, pivots, r, o, tmp)
            objective_lanes(tb, pos, obs, weight, q, nw, loss, scale, res, weff, tw, target,
                            lane[_COST], sums)  # fmt: skip
        assemble_lanes(tb, pos, axes, pivots, rp, res, weff, own, mom, xi, f, hd, hc, hr, g)
        damp_lanes(tb, hd, g, q, prior, lane[_LAM], cfg.angle_floor, tw, target, act_new,
                   not gn)  # fmt: skip
        solve_tree_lanes(tb, hd, hc, hr, g, step, lane[_INV], lane[_LK], ok[_SOLVED],
                         act_new)  # fmt: skip
        apply_step_lanes(tb, q, rp, rq, step, q_new, rp_new, rq_new, act_new, lane[_MAXP],
                         lane[_MAXA], ok[_FINITE])  # fmt: skip
        advance_half_lanes(q, q_new, half, half_new)
        for ln in range(LANES):
            lane[_CAND, ln] = lane[_COST, ln]
        if not gn:  # the candidates' forward pass: an accepted step's next iteration's
            _root_frames(rq_new, root_rot, ws.rq, rot3)
            fk_lanes(tb, q_new, half_new, rp_new, root_rot, True, rot, org, pos, axes, pivots,
                     r, o, tmp)  # fmt: skip
            objective_lanes(tb, pos, obs, weight, q_new, nw, loss, scale, res, weff, tw, target,
                            lane[_CAND], sums)  # fmt: skip
        for ln in range(LANES):
            if not ok[_BUSY, ln]:
                ok[_ACCEPTED, ln] = False
                ok[_DONE, ln] = True
                continue
            cost = lane[_COST, ln]
            fin = ok[_FINITE, ln] and math.isfinite(cost)
            small = small_update(lane[_MAXP, ln], lane[_MAXA, ln], lane[_LASTP, ln],
                                 lane[_LASTA, ln], cfg.position_tolerance, cfg.angle_tolerance,
                                 cfg.distance)  # fmt: skip
            tried = fin and not gn
            cand = lane[_CAND, ln] if tried else cost
            accepted = accepts(gn, fin, cost, cand)
            lam = next_damping(gn, lane[_LAM, ln], accepted, cfg.damping)
            reason, done = stop_reason(gn, fin, small, accepted, cost, cand, lam,
                                       cfg.cost_tolerance)  # fmt: skip
            lane[_LAM, ln] = lam
            lane[_REASON, ln] = reason
            ok[_ACCEPTED, ln] = accepted
            ok[_DONE, ln] = done or lane[_IT, ln] >= cfg.n_iterations
            if accepted:
                lane[_COST, ln] = cand
                lane[_LASTP, ln], lane[_LASTA, ln] = lane[_MAXP, ln], lane[_MAXA, ln]
            else:
                lane[_LASTP, ln] = lane[_LASTA, ln] = NO_UPDATE
            ok[_FRESH, ln] = accepted and tried
        _keep_accepted(lw)
