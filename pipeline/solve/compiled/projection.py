r"""Compiled engine for pixels through calibrated cameras: projection rows per view.

A keypoint ``p`` seen by view ``c`` has the pixel residual ``r = obs - pi_c(p)`` and the
``2x3`` derivative ``P = d pi_c / dp`` of the distorted projection
(:mod:`pipeline.cameras.lens_projection`'s formulas, scalar here). Its Gauss-Newton rows are
``P @ J_p``; summed over the views that see it, a keypoint contributes ``J_p^T M J_p`` to
the normal matrix and ``J_p^T b`` to the gradient with the *anisotropic* ``3x3`` weight
``M = sum_c w_c P^T P`` and ``b = sum_c w_c P^T r`` (``w_c`` the robust weight of that
view's residual). The isotropic subtree moments of :mod:`.normal` do not apply; instead
every keypoint's ``6x6`` screw block ``A^T M A`` (``A = [-[p]x, I]``, positions relative
to the root) and ``A^T b = (p x b, b)`` are summed up the tree, and the entries of two
coordinates on one path are ``xi_k^T Phi_l xi_l`` as there, so :func:`.normal.solve_tree`
factors the same sparse system. The loop is :mod:`.frames`' (the same bundles, start,
damping and :mod:`pipeline.solve.rules` accept/damping/stop functions); the cold root
pose and the diagnostics come from the numpy engine, so results equal
:mod:`pipeline.solve.numpy`'s to round-off.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.cameras.lens_projection import CameraArrays, pack
from pipeline.solve.compiled.bundles import (
    Inputs,
    Outputs,
    PixelScratch,
    Settings,
    Workspace,
    outputs,
    pixel_scratch,
    settings,
    task_arrays,
    workspace,
)
from pipeline.solve.compiled.driven import screw
from pipeline.solve.compiled.forward import fk
from pipeline.solve.compiled.lens import XY_PLANE, project_point
from pipeline.solve.compiled.loop import damp_system, hold_step, start_pose, task_row
from pipeline.solve.compiled.normal import solve_tree
from pipeline.solve.compiled.pose import apply_step, copy, fill
from pipeline.solve.compiled.precision import precision_of
from pipeline.solve.compiled.so3 import quat_to_matrix
from pipeline.solve.compiled.tables import tables
from pipeline.solve.mappers import XYView
from pipeline.solve.numpy.pose import Pose, cold_pose, diagnostics
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult
from pipeline.solve.rules import (
    CAUCHY,
    HUBER,
    JIT,
    MAX_ITERATIONS,
    NO_UPDATE,
    accepts,
    next_damping,
    small_update,
    stop_reason,
)
from pipeline.solve.temporal.uncertainty import FrameMoments

__all__ = ["solve_projected"]


@nb.njit(**JIT)
def objective_px(tb, cam, pos, obs, w, q, nw, loss, scale, res, weff, pj, tw, tt) -> float:
    """The projected objective of one pose (as :func:`.forward.objective`, in pixels).

    Fills the pixel residuals ``res (C, J, 2)``, robust weights ``weff (C, J)`` and
    projection Jacobians ``pj (C, J, 2, 3)`` (where observed); ``tw``, ``tt`` ``(N,)``:
    coordinate-task weights and targets.
    """
    cost = 0.0
    s2 = scale * scale
    for c in range(obs.shape[0]):
        for j in range(pos.shape[0]):
            wj = w[c, j]
            ok = False
            u = v = 0.0
            if wj > 0.0:
                u, v, ok = project_point(cam, c, pos[j], pj[c, j])
            r0, r1 = obs[c, j, 0] - u, obs[c, j, 1] - v
            if not (ok and math.isfinite(r0) and math.isfinite(r1)):
                res[c, j, 0] = res[c, j, 1] = 0.0
                weff[c, j] = 0.0
                continue
            res[c, j, 0], res[c, j, 1] = r0, r1
            d2 = r0 * r0 + r1 * r1
            if loss == HUBER:
                e = math.sqrt(d2)
                if e <= scale:
                    weff[c, j] = wj
                    cost += wj * d2
                else:
                    weff[c, j] = wj * scale / e
                    cost += wj * (2.0 * scale * e - s2)
            elif loss == CAUCHY:
                weff[c, j] = wj / (1.0 + d2 / s2)
                cost += wj * s2 * math.log1p(d2 / s2)
            else:
                weff[c, j] = wj
                cost += wj * d2
    prior = 0.0
    tasks = 0.0
    for k in range(q.shape[0]):
        dq = q[k] - tb.neutral[k]
        prior += tb.prior_scale[k] * dq * dq
        dt = q[k] - tt[k]
        tasks += tw[k] * dt * dt
    return cost + nw * prior + tasks


@nb.njit(**JIT)
def assemble_px(tb, pos, axes, pivots, root_pos, res, weff, pj, phi, gm, xi, f, hd, hc, hr, g):
    """Normal matrix (ancestor entries) and gradient from the views' projection rows.

    ``phi (J + 1, 6, 6)`` and ``gm (J + 1, 6)`` are scratch: the screw blocks and
    gradients of the keypoints strictly below each joint (row ``J``: all keypoints).
    """
    nj = pos.shape[0]
    nr = tb.n_root
    phi[:] = 0.0
    gm[:] = 0.0
    m = np.empty((3, 3))
    bm = np.empty((3, 6))
    for j in range(nj - 1, -1, -1):
        px = pos[j, 0] - root_pos[0]
        py = pos[j, 1] - root_pos[1]
        pz = pos[j, 2] - root_pos[2]
        m[:] = 0.0
        b0 = b1 = b2 = 0.0
        for c in range(weff.shape[0]):
            wc = weff[c, j]
            if wc == 0.0:
                continue
            r0, r1 = wc * res[c, j, 0], wc * res[c, j, 1]
            for a in range(3):
                pa0, pa1 = pj[c, j, 0, a], pj[c, j, 1, a]
                for b in range(3):
                    m[a, b] += wc * (pa0 * pj[c, j, 0, b] + pa1 * pj[c, j, 1, b])
            b0 += pj[c, j, 0, 0] * r0 + pj[c, j, 1, 0] * r1
            b1 += pj[c, j, 0, 1] * r0 + pj[c, j, 1, 1] * r1
            b2 += pj[c, j, 0, 2] * r0 + pj[c, j, 1, 2] * r1
        p = tb.parent[j]
        if p < 0:
            p = nj
        for a in range(3):  # B = M A, A = [-[p]x, I]: column k of -[p]x is e_k x p
            bm[a, 0] = m[a, 2] * py - m[a, 1] * pz
            bm[a, 1] = m[a, 0] * pz - m[a, 2] * px
            bm[a, 2] = m[a, 1] * px - m[a, 0] * py
            bm[a, 3], bm[a, 4], bm[a, 5] = m[a, 0], m[a, 1], m[a, 2]
        for k in range(6):  # A^T B: rows [p]x B (p x column), then B
            phi[p, 0, k] += py * bm[2, k] - pz * bm[1, k] + phi[j, 0, k]
            phi[p, 1, k] += pz * bm[0, k] - px * bm[2, k] + phi[j, 1, k]
            phi[p, 2, k] += px * bm[1, k] - py * bm[0, k] + phi[j, 2, k]
            phi[p, 3, k] += bm[0, k] + phi[j, 3, k]
            phi[p, 4, k] += bm[1, k] + phi[j, 4, k]
            phi[p, 5, k] += bm[2, k] + phi[j, 5, k]
        gm[p, 0] += py * b2 - pz * b1 + gm[j, 0]
        gm[p, 1] += pz * b0 - px * b2 + gm[j, 1]
        gm[p, 2] += px * b1 - py * b0 + gm[j, 2]
        gm[p, 3] += b0 + gm[j, 3]
        gm[p, 4] += b1 + gm[j, 4]
        gm[p, 5] += b2 + gm[j, 5]
    for s in range(nr + tb.dof_joint.shape[0]):
        if s < nr:
            jk = nj
            for c in range(6):
                xi[s, c] = 0.0
            xi[s, (s + 3) % 6] = 1.0
        else:
            k = s - nr
            jk = tb.dof_joint[k]
            ux, uy, uz = axes[k, 0], axes[k, 1], axes[k, 2]
            if tb.coupled:  # the DOF's screw on its own joint's subtree (.driven)
                xi[s, 0], xi[s, 1], xi[s, 2], xi[s, 3], xi[s, 4], xi[s, 5] = screw(
                    axes, pivots, k, root_pos
                )
            elif tb.angular[k]:
                ox = pivots[k, 0] - root_pos[0]
                oy = pivots[k, 1] - root_pos[1]
                oz = pivots[k, 2] - root_pos[2]
                xi[s, 0], xi[s, 1], xi[s, 2] = ux, uy, uz
                xi[s, 3] = oy * uz - oz * uy
                xi[s, 4] = oz * ux - ox * uz
                xi[s, 5] = ox * uy - oy * ux
            else:
                xi[s, 0] = xi[s, 1] = xi[s, 2] = 0.0
                xi[s, 3], xi[s, 4], xi[s, 5] = ux, uy, uz
        acc = 0.0
        for a in range(6):
            fa = 0.0
            for b in range(6):
                fa += phi[jk, a, b] * xi[s, b]
            f[s, a] = fa
            acc += xi[s, a] * gm[jk, a]
        g[s] = acc
        hd[s] = 0.0
        if s >= nr:  # a coupled DOF's extra groups (as in .normal.assemble)
            for e in range(tb.extra_start[s - nr], tb.extra_start[s - nr + 1]):
                je = tb.extra_joint[e]
                xe = screw(axes, pivots, tb.dof_joint.shape[0] + e, root_pos)
                for a in range(6):
                    fa = 0.0
                    for b in range(6):
                        fa += phi[je, a, b] * xe[b]
                    f[s, a] += fa
                    g[s] += xe[a] * gm[je, a]
                    hd[s] += (xe[a] - xi[s, a]) * fa  # xi_e Phi_e xi_e, not xi Phi_e xi_e
    for s in range(nr + tb.dof_joint.shape[0]):
        acc = hd[s]
        for c in range(6):
            acc += xi[s, c] * f[s, c]
        hd[s] = acc
        for mm in range(tb.local_depth[s]):
            i = tb.ancestors[s, mm]
            acc = 0.0
            for c in range(6):
                acc += xi[i, c] * f[s, c]
            hc[s, mm] = acc
        for c in range(min(s, nr)):
            hr[s, c] = f[s, (c + 3) % 6]
    fx, fc = tb.fix_int, tb.fix_coef
    for c in range(fx.shape[0]):  # a coupled plan's nested groups (.coupled_terms)
        xa = screw(axes, pivots, fx[c, 2], root_pos)
        xb = screw(axes, pivots, fx[c, 3], root_pos)
        jf = fx[c, 4]
        acc = 0.0
        for a in range(6):
            fa = 0.0
            for b in range(6):
                fa += phi[jf, a, b] * xb[b]
            acc += xa[a] * fa
        if fx[c, 1] < 0:
            hd[fx[c, 0]] += fc[c] * acc
        else:
            hc[fx[c, 0], fx[c, 1]] += fc[c] * acc


@nb.njit(**JIT)
def _precision_px(tb, cam, inp: Inputs, cfg: Settings, ws: Workspace, px: PixelScratch,
                  out: Outputs, t: int) -> None:  # fmt: skip
    """:func:`.precision.frame_precision` for projection rows, at frame ``t``'s pose in ``out``."""
    res, weff, pj = px.res, px.weff, px.pj
    q, rp = out.dof_value[t], out.root_position[t]
    prior = cfg.neutral_weight * tb.prior_scale + inp.task_weight
    quat_to_matrix(out.root_orientation[t], ws.root_rot)
    fk(tb, q, rp, ws.root_rot, True, ws.rot, ws.org, ws.pos, ws.axes, ws.pivots, ws.tmp,
       ws.half)  # fmt: skip
    objective_px(tb, cam, ws.pos, inp.obs[t], inp.weight[t], q, cfg.neutral_weight, cfg.loss,
                 cfg.loss_scale, res, weff, pj, inp.task_weight, task_row(inp, t))  # fmt: skip
    assemble_px(tb, ws.pos, ws.axes, ws.pivots, rp, res, weff, pj, px.phi, px.gm, ws.xi, ws.f,
                ws.hd, ws.hc, ws.hr, ws.g)  # fmt: skip
    wr2 = wsum = rows = 0.0
    for c in range(weff.shape[0]):
        for j in range(weff.shape[1]):
            w = weff[c, j]
            if w > 0.0:
                wr2 += w * (res[c, j, 0] ** 2 + res[c, j, 1] ** 2)
                wsum += w
                rows += 2.0
    mom = out.moments[t]
    mom[0], mom[1], mom[2] = wr2, wsum, rows
    precision_of(tb, prior, ws.hd, ws.hc, ws.hr, ws.zd, ws.zc, ws.zr, out.information[t],
                 out.inverse[t])  # fmt: skip


@nb.njit(**JIT)
def _kernel(tb, cam, inp: Inputs, cfg: Settings, ws: Workspace, px: PixelScratch,
            out: Outputs) -> None:  # fmt: skip
    """:func:`.frames.solve_frames_kernel`'s loop on the projected objective.

    Takes that kernel's bundles (pixel ``inp``; ``out`` without keypoint rows), the packed
    cameras ``cam`` and their scratch ``px``; fills the pose, ``iterations``,
    ``stop_reason``, ``limit_active`` and, with ``cfg.uncertainty``, the uncertainty inputs.
    """
    prior = cfg.neutral_weight * tb.prior_scale
    tw = inp.task_weight
    nw, loss, scale, gn = cfg.neutral_weight, cfg.loss, cfg.loss_scale, cfg.gn
    res, weff, pj, phi, gm = px.res, px.weff, px.pj, px.phi, px.gm
    rot, org, pos, axes, pivots, tmp = ws.rot, ws.org, ws.pos, ws.axes, ws.pivots, ws.tmp
    half, root_rot = ws.half, ws.root_rot
    for t in range(inp.weight.shape[0]):
        start_pose(tb, inp, cfg, ws, out, t)
        q, rp, rq, act = ws.q, ws.rp, ws.rq, ws.act
        q_new, rp_new, rq_new, act_new = ws.q_new, ws.rp_new, ws.rq_new, ws.act_new
        obs_t, w_t, tt = inp.obs[t], inp.weight[t], task_row(inp, t)
        lam = cfg.lam0
        fill(act, False)
        reason = MAX_ITERATIONS
        it = 0
        last_pos = last_ang = NO_UPDATE  # the last accepted update (small_update)
        while it < cfg.n_iterations:
            it += 1
            quat_to_matrix(rq, root_rot)
            fk(tb, q, rp, root_rot, True, rot, org, pos, axes, pivots, tmp, half)
            cost = objective_px(tb, cam, pos, obs_t, w_t, q, nw, loss, scale, res, weff, pj,
                                tw, tt)  # fmt: skip
            assemble_px(tb, pos, axes, pivots, rp, res, weff, pj, phi, gm, ws.xi, ws.f, ws.hd,
                        ws.hc, ws.hr, ws.g)  # fmt: skip
            damp_system(tb, ws.hd, ws.g, q, prior, lam, cfg.angle_floor, tw, tt, act_new,
                        not gn)  # fmt: skip
            solve_tree(tb, ws.hd, ws.hc, ws.hr, ws.g, ws.step)
            hold_step(tb, ws.step, act_new)
            max_pos, max_ang, finite = apply_step(
                tb, q, rp, rq, ws.step, q_new, rp_new, rq_new, act_new
            )
            ok = finite and math.isfinite(cost)
            small = small_update(max_pos, max_ang, last_pos, last_ang, cfg.position_tolerance,
                                 cfg.angle_tolerance, cfg.distance)  # fmt: skip
            cand = cost
            if ok and not gn:
                quat_to_matrix(rq_new, root_rot)
                fk(tb, q_new, rp_new, root_rot, False, rot, org, pos, axes, pivots, tmp, half)
                cand = objective_px(tb, cam, pos, obs_t, w_t, q_new, nw, loss, scale, res,
                                    weff, pj, tw, tt)  # fmt: skip
            accepted = accepts(gn, ok, cost, cand)
            lam = next_damping(gn, lam, accepted, cfg.damping)
            reason, done = stop_reason(gn, ok, small, accepted, cost, cand, lam,
                                       cfg.cost_tolerance)  # fmt: skip
            if accepted:
                q, q_new = q_new, q
                rp, rp_new = rp_new, rp
                rq, rq_new = rq_new, rq
                act, act_new = act_new, act
                last_pos, last_ang = max_pos, max_ang
            else:
                fill(act, False)  # the pose is kept
                last_pos = last_ang = NO_UPDATE
            if done:
                break
        copy(q, out.dof_value[t])
        copy(rp, out.root_position[t])
        copy(rq, out.root_orientation[t])
        copy(act, out.limit_active[t])
        out.iterations[t] = it
        out.stop_reason[t] = reason
        if cfg.uncertainty:
            _precision_px(tb, cam, inp, cfg, ws, px, out, t)


def solve_projected(
    prob: Problem, start: Pose | None, chained: bool, cold: np.ndarray | None = None
) -> tuple[FitResult, FrameMoments | None]:
    """Solve a problem of calibrated cameras or of the image plane frame by frame.

    Parameters
    ----------
    prob : Problem
        Float64, with a ``CalibratedCameras`` or ``XYView`` mapper.
    start : Pose or None
        Start poses (one per frame, or one for all); None: the numpy engine's cold start
        (neutral DOFs, root by DLT-then-Kabsch) for every frame that starts cold.
    chained : bool
        Warm-start every frame from the solution before it (a sequence).
    cold : (T,) bool, optional
        With ``chained``: frames that start cold (default: the first only).

    Returns
    -------
    FitResult
        Diagnostics from the numpy engine's :func:`~pipeline.solve.numpy.pose.diagnostics`.
    FrameMoments or None
        The uncertainty inputs at every solution, from the kernel (as
        :func:`~pipeline.solve.compiled.solve_compiled`'s); None without
        ``Settings.uncertainty``.
    """
    cfg = prob.config
    tb = tables(prob.plan)
    t = prob.n_frames
    if cold is None:
        cold = np.zeros(t, np.bool_)
        cold[:1] = True
    cold = np.ascontiguousarray(cold, dtype=np.bool_)
    if start is None:  # every frame's own cold start, or the first frame's for a sequence
        start = cold_pose(prob, np.arange(1 if chained and cold.sum() <= 1 else t))
    kcfg = settings(cfg, prob.neutral_weight, prob.position_tolerance, prob.angle_floor,
                    chained, cfg.warm_start == "velocity", False)  # fmt: skip
    cam = _camera_arrays(prob.mapper)
    inp = Inputs(
        *(np.ascontiguousarray(a, dtype=np.float64)
          for a in (prob.obs, prob.weight, start.q, start.root_pos, start.root_quat)),
        cold, *task_arrays(prob),
    )  # fmt: skip
    out = outputs(tb, t, keypoints=False)
    if t:
        _kernel(tb, cam, inp, kcfg, workspace(tb), pixel_scratch(tb, prob.mapper.n_views),
                out)  # fmt: skip
    pose = Pose(out.root_position, out.root_orientation, out.dof_value)
    result = diagnostics(prob, pose, out.iterations, out.stop_reason, out.limit_active)
    result = result.astype(cfg.np_dtype)
    if not kcfg.uncertainty:
        return result, None
    m = out.moments
    return result, FrameMoments(out.information, out.inverse, m[:, 0], m[:, 1], m[:, 2])


def _camera_arrays(mapper) -> CameraArrays:
    """The kernel's cameras: the calibrated ones, or one :data:`.lens.XY_PLANE` view."""
    if isinstance(mapper, XYView):
        one = np.zeros((1, 2))
        model = np.full(1, XY_PLANE, np.int64)
        rotation, translation, coef = np.eye(3)[None], np.zeros((1, 3)), np.zeros((1, 5))
        return CameraArrays(rotation, translation, one + 1, one, model, coef)
    return CameraArrays(*(np.ascontiguousarray(a) for a in pack(mapper.cameras)))
