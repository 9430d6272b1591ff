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

from pipeline.kinematics.model import HINGE, SWING1
from pipeline.solve.compiled.forward import fk, objective
from pipeline.solve.compiled.normal import assemble, solve_tree
from pipeline.solve.compiled.so3 import (
    quat_from_rotvec_times,
    quat_times_rotvec,
    quat_to_matrix,
)
from pipeline.solve.compiled.tables import Tables

__all__ = ["clamp_into", "local_quats", "solve_frames_kernel"]

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}
_EPS_TOL = 16 * np.finfo(np.float64).eps


@nb.njit(**_JIT)
def clamp_into(tb: Tables, q: np.ndarray, wrap: bool, active: np.ndarray) -> None:
    """Clamp ``q`` to the plan's limits in place (as :func:`pipeline.solve.limits.clamp`).

    ``active`` is set True where the clamp moved a value (it is never reset here).
    """
    n = q.shape[0]
    for k in range(n):
        v = q[k]
        c = min(max(v, tb.lower[k]), tb.upper[k])
        if c != v:
            active[k] = True
        if wrap and tb.free_angle[k]:
            rel = c - tb.neutral[k]
            c = tb.neutral[k] + (rel + math.pi) % (2.0 * math.pi) - math.pi
        q[k] = c
    for k in range(n):
        if tb.dof_type[k] != SWING1:
            continue
        s1, s2 = q[k], q[k + 1]
        theta = math.sqrt(s1 * s1 + s2 * s2)
        if theta > math.pi:
            f = (theta - 2.0 * math.pi) / theta
            s1, s2 = s1 * f, s2 * f
        a1, a2 = tb.cone[k, 0], tb.cone[k, 1]
        e = (s1 / a1) ** 2 + (s2 / a2) ** 2
        if e > 1.0 + _EPS_TOL:
            r = math.sqrt(e)
            s1, s2 = s1 / r, s2 / r
            active[k] = True
            active[k + 1] = True
        q[k], q[k + 1] = s1, s2


@nb.njit(**_JIT)
def local_quats(tb: Tables, q: np.ndarray, out: np.ndarray) -> None:
    """Each joint's rotation relative to its rest frame, ``(J, 4)`` wxyz with ``w >= 0``.

    The product of the joint's own DOF rotations (slides do not rotate), as
    :func:`pipeline.kinematics.forward.joint_rotations_local`.
    """
    for j in range(out.shape[0]):
        r = out[j]
        r[0], r[1], r[2], r[3] = 1.0, 0.0, 0.0, 0.0
        for k in range(tb.dof_start[j], tb.dof_start[j + 1]):
            ax = tb.dof_axis[k]
            if tb.dof_type[k] == HINGE:
                quat_times_rotvec(r, ax[0] * q[k], ax[1] * q[k], ax[2] * q[k])
            elif tb.dof_type[k] == SWING1:
                b = tb.dof_axis[k + 1]
                s1, s2 = q[k], q[k + 1]
                quat_times_rotvec(
                    r, s1 * ax[0] + s2 * b[0], s1 * ax[1] + s2 * b[1], s1 * ax[2] + s2 * b[2]
                )
        nrm = math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3])
        if r[0] < 0.0:
            nrm = -nrm
        for i in range(4):
            r[i] /= nrm


@nb.njit(**_JIT)
def _diagnostics(
    pos: np.ndarray, obs: np.ndarray, w: np.ndarray, res: np.ndarray, stats: np.ndarray
) -> None:
    """Residual distances ``(J,)`` (NaN where missing) and ``stats = (rms, max, count)``."""
    total, big, count = 0.0, 0.0, 0
    for j in range(pos.shape[0]):
        r0 = obs[j, 0] - pos[j, 0]
        r1 = obs[j, 1] - pos[j, 1]
        r2 = obs[j, 2] - pos[j, 2]
        d2 = r0 * r0 + r1 * r1 + r2 * r2
        if w[j] > 0.0 and math.isfinite(d2):
            res[j] = math.sqrt(d2)
            total += d2
            big = max(big, d2)
            count += 1
        else:
            res[j] = np.nan
    stats[0] = math.sqrt(total / max(count, 1))
    stats[1] = math.sqrt(big)
    stats[2] = count


@nb.njit(**_JIT)
def _all_finite(a: np.ndarray) -> bool:
    for v in a.ravel():  # noqa: SIM110 (a plain loop compiles to a tight loop in numba)
        if not math.isfinite(v):
            return False
    return True


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
        Starting poses, already clamped: one per frame (``chained`` False) or the first
        frame's (``chained`` True, later frames start from the previous solution).
    chained : bool
        Warm-start each frame from the one before (:func:`solve_sequence`).
    velocity : bool
        With ``chained``: start from ``2 p[t-1] - p[t-2]`` once two frames are solved.
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
    res = np.empty((nj, 3))
    weff = np.empty(nj)
    mom = np.empty((nj + 1, 16))
    xi = np.empty((ns, 6))
    f = np.empty((ns, 6))
    hd = np.empty(ns)
    hc = np.zeros((ns, tb.ancestors.shape[1]))
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
    lam0 = damping if gn else lm_damping
    for t in range(t_total):
        if not chained or t == 0:
            i0 = t if not chained else 0
            q[:] = init_q[i0]
            rp[:] = init_root_pos[i0]
            rq[:] = init_root_quat[i0]
        else:
            q[:] = out_q[t - 1]
            rp[:] = out_root_pos[t - 1]
            rq[:] = out_root_quat[t - 1]
            if velocity and t >= 2:
                for k in range(n):
                    q[k] = 2.0 * q[k] - out_q[t - 2, k]
                for i in range(3):
                    rp[i] = 2.0 * rp[i] - out_root_pos[t - 2, i]
                # delta = q1 * conj(q2); start = delta * q1
                a, b = out_root_quat[t - 1], out_root_quat[t - 2]
                dw = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
                dx = -a[0] * b[1] + a[1] * b[0] - a[2] * b[3] + a[3] * b[2]
                dy = -a[0] * b[2] + a[1] * b[3] + a[2] * b[0] - a[3] * b[1]
                dz = -a[0] * b[3] - a[1] * b[2] + a[2] * b[1] + a[3] * b[0]
                rq[0] = dw * a[0] - dx * a[1] - dy * a[2] - dz * a[3]
                rq[1] = dw * a[1] + dx * a[0] + dy * a[3] - dz * a[2]
                rq[2] = dw * a[2] - dx * a[3] + dy * a[0] + dz * a[1]
                rq[3] = dw * a[3] + dx * a[2] - dy * a[1] + dz * a[0]
                nq = math.sqrt(rq[0] ** 2 + rq[1] ** 2 + rq[2] ** 2 + rq[3] ** 2)
                for i in range(4):
                    rq[i] /= nq
            act[:] = False
            clamp_into(tb, q, True, act)
        lam = lam0
        act[:] = False
        done = False
        it = 0
        while it < n_iterations and not done:
            it += 1
            quat_to_matrix(rq, root_rot)
            fk(tb, q, rp, root_rot, True, rot, org, pos, axes, pivots, tmp)
            cost = objective(tb, pos, obs[t], weight[t], q, neutral_weight, loss, loss_scale,
                             res, weff)  # fmt: skip
            assemble(tb, pos, axes, pivots, rp, res, weff, mom, xi, f, hd, hc, g)
            for k in range(n):
                s = nr + k
                pk = neutral_weight * tb.prior_scale[k]
                hd[s] += pk
                g[s] -= pk * (q[k] - tb.neutral[k])
            for s in range(ns):
                hd[s] += lam * max(hd[s], 1.0)
            solve_tree(tb, hd, hc, g, step)
            # apply: clamp the DOFs, move the root
            act_new[:] = False
            for k in range(n):
                q_new[k] = q[k] + step[nr + k]
            clamp_into(tb, q_new, False, act_new)
            max_pos = 0.0
            max_ang = 0.0
            for k in range(n):
                d = abs(q_new[k] - q[k])
                if tb.angular[k]:
                    max_ang = max(max_ang, d)
                else:
                    max_pos = max(max_pos, d)
            if nr:
                for i in range(3):
                    rp_new[i] = rp[i] + step[i]
                    max_pos = max(max_pos, abs(step[i]))
                max_ang = max(max_ang, math.sqrt(step[3] ** 2 + step[4] ** 2 + step[5] ** 2))
                quat_from_rotvec_times(step[3:6], rq, rq_new)
            else:
                rp_new[:] = rp
                rq_new[:] = rq
            broken = not (
                math.isfinite(cost)
                and _all_finite(q_new)
                and _all_finite(rp_new)
                and _all_finite(rq_new)
            )
            if broken:
                act[:] = False
                continue
            small = max_pos < pos_tol and max_ang < ang_tol
            if gn:
                q[:] = q_new
                rp[:] = rp_new
                rq[:] = rq_new
                act[:] = act_new
                done = small
                continue
            quat_to_matrix(rq_new, root_rot)
            fk(tb, q_new, rp_new, root_rot, False, rot, org, pos, axes, pivots, tmp)
            cand = objective(tb, pos, obs[t], weight[t], q_new, neutral_weight, loss,
                             loss_scale, res, weff)  # fmt: skip
            accept = cand <= cost
            if accept:
                q[:] = q_new
                rp[:] = rp_new
                rq[:] = rq_new
                act[:] = act_new
                lam = max(lam * 0.3, damping)
            else:
                act[:] = False
                lam = lam * 10.0
            flat = abs(cost - cand) <= 1e-14 * max(cost, 1e-30)
            done = (accept and small) or lam > 1e10 or flat
        out_q[t] = q
        out_root_pos[t] = rp
        out_root_quat[t] = rq
        iterations[t] = it
        converged[t] = done
        limit_active[t] = act
        quat_to_matrix(rq, root_rot)
        fk(tb, q, rp, root_rot, False, rot, org, fitted[t], axes, pivots, tmp)
        local_quats(tb, q, joint_rotation[t])
        _diagnostics(fitted[t], obs[t], weight[t], residuals[t], stats[t])
