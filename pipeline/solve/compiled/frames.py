"""The compiled per-frame Gauss-Newton / Levenberg-Marquardt loop.

Semantics are the numpy engine's (:mod:`pipeline.solve.solver`), one frame at a time:
QuickIK's damped Gauss-Newton step with the neutral prior, clamp on write, the stopping
rule on the applied update, no step for a singular system, and the LM acceptance rule.
A sequence runs frame after frame, each starting from the previous solution (or a
constant-velocity prediction) with unbounded angles wrapped, so no warm-up frames are
needed. Arithmetic is float64 whatever the caller's dtype: scalar code gains nothing from
float32.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.forward import fk, objective
from pipeline.solve.compiled.normal import assemble, solve_tree
from pipeline.solve.compiled.pose import (
    apply_step,
    copy,
    diagnostics,
    fill,
    kabsch_start,
    local_quats,
    warm_start,
)
from pipeline.solve.compiled.so3 import quat_to_matrix
from pipeline.solve.compiled.tables import Tables

__all__ = ["solve_frames_kernel"]

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@nb.njit(**_JIT)
def solve_frames_kernel(
    tb: Tables,
    obs: np.ndarray,
    weight: np.ndarray,
    init_q: np.ndarray,
    init_root_pos: np.ndarray,
    init_root_quat: np.ndarray,
    chained: bool,
    velocity: bool,
    kabsch: bool,
    n_iterations: int,
    gn: bool,
    neutral_weight: float,
    damping: float,
    lm_damping: float,
    pos_tol: float,
    ang_tol: float,
    loss: int,
    loss_scale: float,
    out_q: np.ndarray,
    out_root_pos: np.ndarray,
    out_root_quat: np.ndarray,
    iterations: np.ndarray,
    converged: np.ndarray,
    limit_active: np.ndarray,
    fitted: np.ndarray,
    joint_rotation: np.ndarray,
    residuals: np.ndarray,
    stats: np.ndarray,
) -> None:
    """Solve frames one after another.

    Parameters
    ----------
    tb : Tables
    obs : (T, J, 3) float64
        Targets, ignored where ``weight`` is 0.
    weight : (T, J) float64
        Observation weights times joint weight scalers, 0 where missing.
    init_q, init_root_pos, init_root_quat : (T0, N), (T0, 3), (T0, 4)
        Starting poses, already clamped: one per frame, or one for all (``T0 == 1``);
        with ``chained`` only the first frame uses it (later frames start from the
        previous solution).
    chained : bool
        Warm-start each frame from the one before (:func:`solve_sequence`).
    velocity : bool
        With ``chained``: start from ``2 p[t-1] - p[t-2]`` once two frames are solved.
    kabsch : bool
        Replace the starting root pose of a frame that is not warm-started by the rigid
        fit of the starting DOFs' keypoints (:func:`~.pose.kabsch_start`).
    n_iterations, gn, neutral_weight, damping, lm_damping, pos_tol, ang_tol, loss, loss_scale
        :class:`SolverConfig` fields (``gn`` for ``mode == "gn"``; ``loss`` a code of
        :data:`~.forward.LOSS_CODES`).
    out_q, out_root_pos, out_root_quat : (T, N), (T, 3), (T, 4) out
    iterations : (T,) int32 out
    converged, limit_active : (T,) and (T, N) bool out
    fitted : (T, J, 3) out
        Keypoints of the solutions.
    joint_rotation : (T, J, 4) out
        Local joint rotations of the solutions (:func:`local_quats`).
    residuals : (T, J) out
        Distance of each observed keypoint from its target, NaN where missing.
    stats : (T, 3) out
        Keypoint RMS, largest residual and number of observed keypoints.
    """
    t_total, nj = weight.shape
    n = tb.dof_type.shape[0]
    nr = tb.n_root
    ns = nr + n
    rot = np.empty((nj, 3, 3))
    org = np.empty((nj, 3))
    pos = np.empty((nj, 3))
    axes = np.zeros((n, 3))
    pivots = np.zeros((n, 3))
    tmp = np.empty((3, 3, 3))
    trig = np.empty((2, n))
    res = np.empty((nj, 3))
    weff = np.empty(nj)
    mom = np.empty((nj + 1, 16))
    xi = np.empty((ns, 6))
    f = np.empty((ns, 6))
    hd = np.empty(ns)
    hc = np.zeros((ns, tb.ancestors.shape[1]))
    hr = np.zeros((ns, 6))
    g = np.empty(ns)
    step = np.empty(ns)
    root_rot = np.empty((3, 3))
    q = np.empty(n)
    rp = np.empty(3)
    rq = np.empty(4)
    q_new = np.empty(n)
    rp_new = np.empty(3)
    rq_new = np.empty(4)
    act = np.zeros(n, np.bool_)
    act_new = np.zeros(n, np.bool_)
    local = np.empty((nj, 3))
    origin = np.zeros(3)
    eye = np.eye(3)
    last_local = -1
    prior = neutral_weight * tb.prior_scale
    lam0 = damping if gn else lm_damping
    for t in range(t_total):
        if chained and t > 0:
            warm_start(tb, out_q, out_root_pos, out_root_quat, t, velocity, q, rp, rq, act_new)
        else:
            i0 = 0 if init_q.shape[0] == 1 else t
            copy(init_q[i0], q)
            copy(init_root_pos[i0], rp)
            copy(init_root_quat[i0], rq)
            if kabsch and nr:
                if i0 != last_local:  # keypoints of this start pose, root at the origin
                    fk(tb, q, origin, eye, False, rot, org, local, axes, pivots, tmp, trig)
                    last_local = i0
                kabsch_start(local, obs[t], weight[t], rp, rq)
        obs_t, w_t = obs[t], weight[t]
        lam = lam0
        fill(act, False)
        done = False
        it = 0
        while it < n_iterations and not done:
            it += 1
            quat_to_matrix(rq, root_rot)
            fk(tb, q, rp, root_rot, True, rot, org, pos, axes, pivots, tmp, trig)
            cost = objective(tb, pos, obs_t, w_t, q, neutral_weight, loss, loss_scale, res, weff)
            assemble(tb, pos, axes, pivots, rp, res, weff, mom, xi, f, hd, hc, hr, g)
            for s in range(nr):  # relative damping (after the prior on DOFs)
                hd[s] += lam * max(hd[s], 1.0)
            for k in range(n):
                s = nr + k
                d = hd[s] + prior[k]
                hd[s] = d + lam * max(d, 1.0)
                g[s] -= prior[k] * (q[k] - tb.neutral[k])
            solve_tree(tb, hd, hc, hr, g, step)  # a failed system gives a zero step
            max_pos, max_ang, finite = apply_step(
                tb, q, rp, rq, step, q_new, rp_new, rq_new, act_new
            )
            if not (finite and math.isfinite(cost)):
                fill(act, False)  # keep the pose; never done (stops as not converged)
                if not gn:
                    lam *= 10.0  # as a rejected step
                continue
            small = max_pos < pos_tol and max_ang < ang_tol
            accept = True
            if not gn:
                quat_to_matrix(rq_new, root_rot)
                fk(tb, q_new, rp_new, root_rot, False, rot, org, pos, axes, pivots, tmp, trig)
                cand = objective(
                    tb, pos, obs_t, w_t, q_new, neutral_weight, loss, loss_scale, res, weff
                )
                accept = cand <= cost
                lam = max(lam * 0.3, damping) if accept else lam * 10.0
                flat = abs(cost - cand) <= 1e-14 * max(cost, 1e-30)
                done = (accept and small) or lam > 1e10 or flat
            else:
                done = small
            if accept:
                q, q_new = q_new, q
                rp, rp_new = rp_new, rp
                rq, rq_new = rq_new, rq
                act, act_new = act_new, act
            else:
                fill(act, False)
        copy(q, out_q[t])
        copy(rp, out_root_pos[t])
        copy(rq, out_root_quat[t])
        iterations[t] = it
        converged[t] = done
        copy(act, limit_active[t])
        quat_to_matrix(rq, root_rot)
        fk(tb, q, rp, root_rot, False, rot, org, fitted[t], axes, pivots, tmp, trig)
        local_quats(tb, q, joint_rotation[t], trig)
        diagnostics(fitted[t], obs_t, w_t, residuals[t], stats[t])
