"""Compiled pose updates of one frame: clamp, step, warm start and the fit diagnostics."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.kinematics.plan_arrays import HINGE, SWING1
from pipeline.solve.compiled.compilers import ALLOCATING_JIT, NOREFCOUNT_JIT
from pipeline.solve.compiled.driven import local_quats_steps
from pipeline.solve.compiled.so3 import matrix_to_quat, quat_from_rotvec_times
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import (
    BALL_SLACK_ULPS,
    INLINE,
    KABSCH_MIN_KEYPOINTS,
    KABSCH_RANK_RTOL,
)

__all__ = [
    "apply_step",
    "clamp_into",
    "copy",
    "diagnostics",
    "fill",
    "kabsch_start",
    "local_quats",
    "warm_start",
]


@nb.njit(**INLINE)
def copy(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[:] = src`` for 1D arrays, as a plain loop (numba's slice copy costs ~0.1 us)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@nb.njit(**INLINE)
def fill(a: np.ndarray, value) -> None:
    """``a[:] = value`` for a 1D array, as a plain loop."""
    for i in range(a.shape[0]):
        a[i] = value


_EPS_TOL = BALL_SLACK_ULPS * np.finfo(np.float64).eps


@nb.njit(**INLINE)
def _clamp_balls(tb: Tables, q: np.ndarray, active: np.ndarray) -> None:
    """Wrap each ball's swing to at most pi, then project it onto its elliptical cone."""
    for k in tb.swing1:
        s1, s2 = q[k], q[k + 1]
        theta = math.sqrt(s1 * s1 + s2 * s2)
        if theta > math.pi:
            f = (theta - 2.0 * math.pi) / theta
            s1, s2 = s1 * f, s2 * f
        e = (s1 / tb.cone[k, 0]) ** 2 + (s2 / tb.cone[k, 1]) ** 2
        if e > 1.0 + _EPS_TOL:  # a few ulps of slack keep the projection idempotent
            r = math.sqrt(e)
            s1, s2 = s1 / r, s2 / r
            active[k] = True
            active[k + 1] = True
        q[k], q[k + 1] = s1, s2


@nb.njit(**INLINE)
def clamp_into(tb: Tables, q: np.ndarray, wrap: bool, active: np.ndarray) -> None:
    """Clamp ``q`` ``(N,)`` to the plan's limits in place (:func:`pipeline.solve.numpy.pose.clamp`).

    With ``wrap``, unbounded hinge angles are wrapped into ``neutral +- pi``. ``active``
    is set True where the clamp moved a value (never reset here).
    """
    lower, upper, free, neutral = tb.lower, tb.upper, tb.free_angle, tb.neutral
    for k in range(q.shape[0]):
        v = q[k]
        c = min(max(v, lower[k]), upper[k])
        if c != v:
            active[k] = True
        if wrap and free[k]:
            rel = c - neutral[k]
            if not -math.pi <= rel < math.pi:  # the modulo is slow; most angles are inside
                c = neutral[k] + (rel + math.pi) % (2.0 * math.pi) - math.pi
        q[k] = c
    _clamp_balls(tb, q, active)


@nb.njit(**INLINE)
def apply_step(
    tb: Tables,
    q: np.ndarray,
    rp: np.ndarray,
    rq: np.ndarray,
    step: np.ndarray,
    q_new: np.ndarray,
    rp_new: np.ndarray,
    rq_new: np.ndarray,
    active: np.ndarray,
) -> tuple[float, float, bool]:
    """The pose after ``step``, clamped; and the sizes of the update actually applied.

    Parameters
    ----------
    tb : Tables
    q, rp, rq : (N,), (3,), (4,)
        Current DOFs, root position and root quaternion (wxyz).
    step : (n_root + N,)
        Root translation, root rotation increment (world frame), DOF steps.
    q_new, rp_new, rq_new : out
    active : (N,) in/out
        On entry the coordinates held at a limit for this step (``damp_system``'s
        ``bound``); on return also those the clamp moved: the step's limit activity.

    Returns
    -------
    max_pos : float
        Largest applied position update (root translation, slides).
    max_ang : float
        Largest applied angle update (rad).
    finite : bool
        Every number of the new pose is finite.
    """
    nr = tb.n_root
    finite = True
    for k in range(q.shape[0]):
        v = q[k] + step[nr + k]
        c = min(max(v, tb.lower[k]), tb.upper[k])
        active[k] = active[k] or c != v
        q_new[k] = c
    _clamp_balls(tb, q_new, active)
    max_pos = 0.0
    max_ang = 0.0
    for k in range(q.shape[0]):
        d = abs(q_new[k] - q[k])
        finite = finite and math.isfinite(q_new[k])
        if tb.angular[k]:
            max_ang = max(max_ang, d)
        else:
            max_pos = max(max_pos, d)
    if nr:
        for i in range(3):
            rp_new[i] = rp[i] + step[i]
            max_pos = max(max_pos, abs(step[i]))
            finite = finite and math.isfinite(rp_new[i])
        max_ang = max(max_ang, math.sqrt(step[3] ** 2 + step[4] ** 2 + step[5] ** 2))
        quat_from_rotvec_times(step[3:6], rq, rq_new)
        for i in range(4):
            finite = finite and math.isfinite(rq_new[i])
    else:
        copy(rp, rp_new)
        copy(rq, rq_new)
    return max_pos, max_ang, finite


@nb.njit(**INLINE)
def warm_start(
    tb: Tables,
    out_q: np.ndarray,
    out_rp: np.ndarray,
    out_rq: np.ndarray,
    t: int,
    velocity: bool,
    q: np.ndarray,
    rp: np.ndarray,
    rq: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """Start pose of frame ``t >= 1`` from the solutions before it (wrapped, clamped).

    ``scratch`` is an ``(N,)`` bool buffer (the clamp's activity, not needed here).

    The previous solution, or with ``velocity`` (from ``t >= 2``) the constant-velocity
    prediction ``2 p[t-1] - p[t-2]`` (the root rotation advanced by the last increment).
    """
    copy(out_q[t - 1], q)
    copy(out_rp[t - 1], rp)
    copy(out_rq[t - 1], rq)
    if velocity and t >= 2:
        for k in range(q.shape[0]):
            q[k] = 2.0 * q[k] - out_q[t - 2, k]
        for i in range(3):
            rp[i] = 2.0 * rp[i] - out_rp[t - 2, i]
        # delta = q1 * conj(q2); start = delta * q1
        a, b = out_rq[t - 1], out_rq[t - 2]
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
    clamp_into(tb, q, True, scratch)


@nb.njit(**INLINE)
def local_quats(tb: Tables, q: np.ndarray, out: np.ndarray, half: np.ndarray) -> None:
    """Each joint's rotation relative to its rest frame, ``(J, 4)`` wxyz with ``w >= 0``.

    The product of the joint's own DOF rotations (slides do not rotate), as
    :func:`pipeline.kinematics.fk_jacobian.joint_rotations_local`. ``half`` ``(2, N)`` holds
    the half-angle cosines and sines of ``q``
    (:func:`~pipeline.solve.compiled.forward.half_angles`). A coupled plan's driven hinges
    rotate too (:func:`~pipeline.solve.compiled.driven.local_quats_steps`).
    """
    if tb.coupled:
        local_quats_steps(tb, q, out, half)
        return
    for j in range(out.shape[0]):
        w, x, y, z = 1.0, 0.0, 0.0, 0.0
        for k in range(tb.dof_start[j], tb.dof_start[j + 1]):
            typ = tb.dof_type[k]
            if typ == HINGE:
                bw, s = half[0, k], half[1, k]
                bx, by, bz = s * tb.dof_axis[k, 0], s * tb.dof_axis[k, 1], s * tb.dof_axis[k, 2]
            elif typ == SWING1:
                s1, s2 = q[k], q[k + 1]
                vx = s1 * tb.dof_axis[k, 0] + s2 * tb.dof_axis[k + 1, 0]
                vy = s1 * tb.dof_axis[k, 1] + s2 * tb.dof_axis[k + 1, 1]
                vz = s1 * tb.dof_axis[k, 2] + s2 * tb.dof_axis[k + 1, 2]
                t = math.sqrt(vx * vx + vy * vy + vz * vz)
                f = 0.5 - t * t / 48.0 if t < 1e-8 else math.sin(0.5 * t) / t
                bw, bx, by, bz = math.cos(0.5 * t), f * vx, f * vy, f * vz
            else:
                continue
            w, x, y, z = (
                w * bw - x * bx - y * by - z * bz,
                w * bx + x * bw + y * bz - z * by,
                w * by - x * bz + y * bw + z * bx,
                w * bz + x * by - y * bx + z * bw,
            )
        nrm = math.sqrt(w * w + x * x + y * y + z * z)
        if w < 0.0:
            nrm = -nrm
        out[j, 0], out[j, 1], out[j, 2], out[j, 3] = w / nrm, x / nrm, y / nrm, z / nrm


@nb.njit(**NOREFCOUNT_JIT)
def diagnostics(
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


@nb.njit(**ALLOCATING_JIT)
def kabsch_start(
    local: np.ndarray, obs: np.ndarray, w: np.ndarray, rp: np.ndarray, rq: np.ndarray
) -> None:
    """Cold-start root pose: the rigid (Kabsch) fit of the neutral keypoints to the targets.

    As :func:`pipeline.solve.numpy.pose.kabsch_start`: with no observed keypoint the origin and
    identity; with fewer than three, or collinear ones, the identity rotation and the
    translation that matches the weighted centroids.

    Parameters
    ----------
    local : (J, 3)
        Keypoints of the neutral pose with the root at the origin and identity rotation.
    obs : (J, 3); w : (J,)
        Targets and weights (0 where missing).
    rp : (3,) out; rq : (4,) out
        Root position and wxyz orientation.
    """
    rp[0] = rp[1] = rp[2] = 0.0
    rq[0], rq[1], rq[2], rq[3] = 1.0, 0.0, 0.0, 0.0
    wsum = 0.0
    count = 0
    for j in range(w.shape[0]):
        wsum += w[j]
        count += w[j] > 0.0
    if not (wsum > 0.0 and math.isfinite(wsum)):
        return
    cl = np.zeros(3)
    ct = np.zeros(3)
    for j in range(w.shape[0]):
        f = w[j] / wsum
        if f > 0.0:
            for a in range(3):
                cl[a] += f * local[j, a]
                ct[a] += f * obs[j, a]
    h = np.zeros((3, 3))
    for j in range(w.shape[0]):
        f = w[j] / wsum
        if f > 0.0:
            for a in range(3):
                for b in range(3):
                    h[a, b] += f * (local[j, a] - cl[a]) * (obs[j, b] - ct[b])
    for a in range(3):
        if not math.isfinite(ct[a]):
            return
        for b in range(3):
            if not math.isfinite(h[a, b]):
                return
    rot = np.eye(3)
    u, sv, vt = np.linalg.svd(h)
    if count >= KABSCH_MIN_KEYPOINTS and sv[1] > KABSCH_RANK_RTOL * max(sv[0], 1e-30):
        d = np.sign(np.linalg.det(u @ vt))
        for a in range(3):
            for b in range(3):
                rot[a, b] = vt[0, a] * u[b, 0] + vt[1, a] * u[b, 1] + d * vt[2, a] * u[b, 2]
    matrix_to_quat(rot, rq)
    for a in range(3):
        rp[a] = ct[a] - (rot[a, 0] * cl[0] + rot[a, 1] * cl[1] + rot[a, 2] * cl[2])
