"""Normal equations with the tree's block-arrow structure, and their elimination.

A keypoint's Jacobian has nonzero columns only for the separator (root pose and the DOFs
every keypoint hangs from) and for the DOFs of its own block (see
:mod:`pipeline.kinematics.plan_arrays`), so the Gauss-Newton normal matrix is

    [[A_ss, A_s1, ..., A_sB],
     [A_1s, A_11,          ],
     [ ...,       ...      ],
     [A_Bs,           A_BB ]]

Each block is eliminated on its own (Schur complement onto the separator), batched over
frames and blocks, with no fill; no dense state-sized solve is ever formed. A coupled
plan (driven axes) has no blocks: its rows come from the chain-rule Jacobian
(:func:`pipeline.kinematics.fk_jacobian.jacobian_from_state`) and its system is dense.
"""

from __future__ import annotations

import numpy as np

from pipeline.kinematics.fk_jacobian import FKState, jacobian_from_state
from pipeline.kinematics.plan_arrays import KinematicModel
from pipeline.solve.limits import limits_held
from pipeline.solve.numpy.linalg import spd_solve
from pipeline.solve.numpy.moments import assemble_moments
from pipeline.solve.numpy.tables import NormalBlocks, block_layout

__all__ = ["assemble_dense", "assemble_rows", "solve_blocks", "solve_normal"]


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(u.shape, v.shape), u.dtype)
    out[..., 0] = u[..., 1] * v[..., 2] - u[..., 2] * v[..., 1]
    out[..., 1] = u[..., 2] * v[..., 0] - u[..., 0] * v[..., 2]
    out[..., 2] = u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]
    return out


def _pair_columns(st: FKState, kp, dof, slide) -> np.ndarray:
    """Jacobian columns ``(S, P, 3)`` of the (keypoint, DOF) pairs."""
    u = st.axes[:, dof]
    col = _cross(u, st.positions[:, kp] - st.pivots[:, dof])
    if slide.any():
        col[:, slide] = u[:, slide]
    return col


def _root_columns(jac: np.ndarray, d: np.ndarray) -> None:
    """Fill the 6 root columns of ``jac (..., K, 3, ncol)`` for lever arms ``d (..., K, 3)``."""
    jac[..., 0, 0] = jac[..., 1, 1] = jac[..., 2, 2] = 1.0
    jac[..., 0, 4], jac[..., 0, 5] = d[..., 2], -d[..., 1]
    jac[..., 1, 3], jac[..., 1, 5] = -d[..., 2], d[..., 0]
    jac[..., 2, 3], jac[..., 2, 4] = d[..., 1], -d[..., 0]


def _rows(jac: np.ndarray, h: np.ndarray | None) -> np.ndarray:
    """Observation rows ``(..., C*K*d, ncol)`` of position Jacobians ``(..., K, 3, ncol)``.

    ``h`` is the mapper Jacobian ``(..., C, K, d, 3)`` or None (identity, C=1, d=3).
    """
    if h is None:
        return jac.reshape(jac.shape[:-3] + (-1, jac.shape[-1]))
    rows = np.matmul(h, jac[..., None, :, :, :])  # (..., C, K, d, ncol)
    return rows.reshape(rows.shape[:-4] + (-1, rows.shape[-1]))


def assemble_rows(
    model: KinematicModel,
    st: FKState,
    residual: np.ndarray,
    weight: np.ndarray,
    mapper_jac: np.ndarray | None,
) -> NormalBlocks:
    """Normal equations from explicit observation rows (any mapper).

    Parameters
    ----------
    model : KinematicModel
    st : FKState
        Forward pass at the current poses (with axes).
    residual : (S, C, J, d)
        ``target - observation``, zero where missing.
    weight : (S, C, J)
        Observation weights (joint weight scalers and robust weights included), zero
        where missing.
    mapper_jac : (S, C, J, d, 3) or None
        Observation-map Jacobian; None for direct 3D observations.

    Returns
    -------
    NormalBlocks
    """
    lay = block_layout(model)
    dt = model.dtype
    s = st.positions.shape[0]
    nr, ns = model.n_root, lay.n_sep
    n_blocks, nb = lay.blk_dof.shape
    kb = lay.blk_kp.shape[1]
    a_ss = np.zeros((s, ns, ns), dt)
    g_s = np.zeros((s, ns), dt)
    if ns and lay.sep_kp.size:
        j0 = np.zeros((s, lay.sep_kp.size, 3, ns), dt)
        if nr:
            _root_columns(j0, st.positions[:, lay.sep_kp] - st.root_position[:, None])
        if lay.sep_pair_kp.size:
            cols = _pair_columns(st, lay.sep_pair_kp, lay.sep_pair_dof, lay.sep_pair_slide)
            j0[:, lay.sep_pair_slot, :, lay.sep_pair_col] = cols.transpose(1, 0, 2)
        h0 = None if mapper_jac is None else mapper_jac[:, :, lay.sep_kp]
        x0 = _rows(j0, h0)  # (S, R0, ns)
        w0 = np.broadcast_to(
            weight[:, :, lay.sep_kp, None], residual[:, :, lay.sep_kp].shape
        ).reshape(s, -1)
        r0 = residual[:, :, lay.sep_kp].reshape(s, -1)
        wx0 = x0 * w0[..., None]
        a_ss += np.matmul(x0.transpose(0, 2, 1), wx0)
        g_s += np.matmul(wx0.transpose(0, 2, 1), r0[..., None])[..., 0]
    if not n_blocks:
        empty = np.zeros((s, 0, 0), dt)
        return NormalBlocks(a_ss, g_s, empty[..., None], empty[..., None], empty)
    jb = np.zeros((s, n_blocks, kb, 3, ns + nb), dt)
    if nr:
        _root_columns(jb, st.positions[:, lay.blk_kp] - st.root_position[:, None, None])
    cols = _pair_columns(st, lay.pair_kp, lay.pair_dof, lay.pair_slide)
    jb[:, lay.pair_block, lay.pair_slot, :, lay.pair_col] = cols.transpose(1, 0, 2)
    hb = None
    if mapper_jac is not None:
        hb = mapper_jac[:, :, lay.blk_kp].transpose(0, 2, 1, 3, 4, 5)  # (S,B,C,kb,d,3)
    xb = _rows(jb, hb)  # (S, B, R, ns+nb)
    wk = weight[:, :, lay.blk_kp] * lay.blk_kp_mask  # (S, C, B, kb)
    res_b = residual[:, :, lay.blk_kp]  # (S, C, B, kb, d)
    wr = np.broadcast_to(wk[..., None], res_b.shape).transpose(0, 2, 1, 3, 4)
    wr = wr.reshape(s, n_blocks, -1)
    rb = res_b.transpose(0, 2, 1, 3, 4).reshape(s, n_blocks, -1)
    wxb = xb * wr[..., None]
    m = np.matmul(xb.transpose(0, 1, 3, 2), wxb)  # (S, B, ns+nb, ns+nb)
    g = np.matmul(wxb.transpose(0, 1, 3, 2), rb[..., None])[..., 0]  # (S, B, ns+nb)
    if ns:
        a_ss += m[..., :ns, :ns].sum(axis=1)
        g_s += g[..., :ns].sum(axis=1)
    return NormalBlocks(a_ss, g_s, m[..., ns:, :ns], m[..., ns:, ns:], g[..., ns:])


def assemble_dense(
    model: KinematicModel,
    st: FKState,
    residual: np.ndarray,
    weight: np.ndarray,
    mapper_jac: np.ndarray | None,
) -> NormalBlocks:
    """Normal equations of a model without blocks (a coupled plan), from dense rows.

    Arguments as in :func:`assemble_rows`.
    """
    s = st.positions.shape[0]
    x = _rows(jacobian_from_state(model, st), mapper_jac)  # (S, R, n_root + N)
    w = np.broadcast_to(weight[..., None], residual.shape).reshape(s, -1)
    wx = x * w[..., None]
    a_ss = np.matmul(x.transpose(0, 2, 1), wx)
    g_s = np.matmul(wx.transpose(0, 2, 1), residual.reshape(s, -1, 1))[..., 0]
    empty = np.zeros((s, 0, 0), model.dtype)
    return NormalBlocks(a_ss, g_s, empty[..., None], empty[..., None], empty)


def solve_normal(
    model: KinematicModel,
    st: FKState,
    residual: np.ndarray,
    weight: np.ndarray,
    mapper_jac: np.ndarray | None,
    q: np.ndarray,
    neutral_weight: float,
    damping: np.ndarray,
    angle_floor: float = 1.0,
    tasks: tuple[np.ndarray, np.ndarray] | None = None,
    limits: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """One damped Gauss-Newton step for a batch of poses.

    Direct 3D observations use the subtree-moment assembly
    (:func:`pipeline.solve.numpy.moments.assemble_moments`); other mappers build explicit
    observation rows (:func:`assemble_rows`).

    Parameters
    ----------
    model, st, residual, weight, mapper_jac
        As in :func:`assemble_rows`.
    q : (S, N)
        Current DOF values (for the neutral prior).
    neutral_weight : float
    damping : (S,)
        Relative damping per pose: ``A_ii += damping * max(A_ii, floor_i)``, ``floor_i``
        1 for a position coordinate and ``angle_floor`` for an angle.
    angle_floor : float
        ``length_scale**2`` (:meth:`SolverConfig.effective`), so that the damping means
        the same in any unit; 1 is QuickIK's ``max(A_ii, 1)``.
    tasks : ((N,) array, (S, N) array), optional
        Coordinate-task weights and the poses' targets: ``weight * (q - target)^2`` joins
        the prior (:mod:`pipeline.solve.tasks`).
    limits : bool
        Hold coordinates at a limit whose gradient points out of their range
        (:func:`pipeline.solve.limits.at_limit`; ``lm`` mode). False: QuickIK's clamp only.

    Returns
    -------
    step : (S, n_root + N) array
        The step; zero for poses whose system could not be solved.
    bound : (S, N) bool
        The coordinates held at a limit for this step (:func:`pipeline.solve.limits.at_limit`).
    """
    if model.coupled:
        blocks = assemble_dense(model, st, residual, weight, mapper_jac)
    elif mapper_jac is None:
        blocks = assemble_moments(model, st, residual[:, 0], weight[:, 0])
    else:
        blocks = assemble_rows(model, st, residual, weight, mapper_jac)
    return solve_blocks(model, blocks, q, neutral_weight, damping, angle_floor, tasks, limits)


def _limit_held(model: KinematicModel, lay, q, g_s, g_b) -> np.ndarray:
    """``(S, N)`` bool: coordinates held at a limit for this step (:func:`..limits.limits_held`)."""
    nr = model.n_root
    descent = np.zeros(q.shape, g_s.dtype)
    if model.sep_dofs.size:
        descent[:, model.sep_dofs] = g_s[:, nr:]
    if lay.blk_dof.size:
        descent[:, lay.blk_dof[lay.blk_dof_mask]] = g_b[:, lay.blk_dof_mask]
    return limits_held(q, model.lower, model.upper, descent)


def _hold(a_ss, g_s, a_bs, a_bb, g_b, hs, hb):
    """Take the held coordinates out of the damped system (the rules' **Step**).

    ``hs`` ``(S, n_sep)`` and ``hb`` ``(S, B, nb)`` bool mark them per pose. Their rows
    and columns become the identity's and their gradient 0, so their step is 0 and the
    other coordinates solve without them.
    """
    if hs.any():
        a_ss = np.where(hs[:, :, None] | hs[:, None, :], 0.0, a_ss)
        idx = np.arange(hs.shape[1])
        a_ss[:, idx, idx] = np.where(hs, 1.0, a_ss[:, idx, idx])
        g_s = np.where(hs, 0.0, g_s)
        if a_bs.size:
            a_bs = np.where(hs[:, None, None, :], 0.0, a_bs)
    if hb.any():
        a_bb = np.where(hb[..., :, None] | hb[..., None, :], 0.0, a_bb)
        idx = np.arange(hb.shape[-1])
        a_bb[..., idx, idx] = np.where(hb, 1.0, a_bb[..., idx, idx])
        a_bs = np.where(hb[..., None], 0.0, a_bs)
        g_b = np.where(hb, 0.0, g_b)
    return a_ss, g_s, a_bs, a_bb, g_b


def solve_blocks(
    model: KinematicModel,
    blocks: NormalBlocks,
    q: np.ndarray,
    neutral_weight: float,
    damping: np.ndarray,
    angle_floor: float = 1.0,
    tasks: tuple[np.ndarray, np.ndarray] | None = None,
    limits: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Add the neutral prior, coordinate tasks and damping, then eliminate blocks.

    ``damping``, ``angle_floor``, ``tasks`` and ``limits`` as in :func:`solve_normal`.

    Returns
    -------
    step : (S, n_root + N) array
        The step; zero for poses whose system could not be solved.
    bound : (S, N) bool
        The coordinates held at a limit for this step (:func:`pipeline.solve.limits.at_limit`).
    """
    lay = block_layout(model)
    dt = model.dtype
    s = q.shape[0]
    nr, ns = model.n_root, lay.n_sep
    n_blocks, nb = lay.blk_dof.shape
    a_ss, g_s, a_bs, a_bb, g_b = blocks
    step = np.zeros((s, nr + model.n_dofs), dt)
    if ns + model.n_dofs == 0:
        return step, np.zeros(q.shape, bool)
    prior = np.broadcast_to((neutral_weight * model.prior_scale).astype(dt), q.shape)
    prior_grad = prior * (q - model.neutral)  # (S, N)
    if tasks is not None:
        task_weight, task_target = tasks
        prior = prior + task_weight.astype(dt)
        prior_grad = prior_grad + task_weight * (q - task_target)
    lam = damping.astype(dt)[:, None]
    sep_dof_idx = model.sep_dofs
    if sep_dof_idx.size:
        diag = np.arange(nr, ns)
        a_ss[:, diag, diag] += prior[:, sep_dof_idx]
        g_s[:, nr:] -= prior_grad[:, sep_dof_idx]

    if n_blocks:
        # prior, padding and damping on the block diagonal
        dmask = lay.blk_dof_mask
        idx = np.arange(nb)
        dg = a_bb[..., idx, idx] + np.where(dmask, prior[:, lay.blk_dof], 1.0)
        floor = np.where(dmask & model.angular[lay.blk_dof], angle_floor, 1.0).astype(dt)
        a_bb[..., idx, idx] = dg + lam[..., None] * np.maximum(dg, floor)
        g_b = np.where(dmask, g_b - prior_grad[:, lay.blk_dof], 0.0)
    if ns:
        idx = np.arange(ns)
        dg = a_ss[:, idx, idx]
        angular = np.concatenate([np.arange(nr) >= 3, model.angular[sep_dof_idx]])
        floor = np.where(angular, angle_floor, 1.0).astype(dt)
        a_ss[:, idx, idx] = dg + lam * np.maximum(dg, floor)

    bound = _limit_held(model, lay, q, g_s, g_b) if limits else np.zeros(q.shape, bool)
    hs = np.zeros((s, ns), bool)
    hs[:, lay.sep_held] = True
    hs[:, nr:] |= bound[:, sep_dof_idx]
    hb = lay.blk_held | (bound[:, lay.blk_dof] & lay.blk_dof_mask)
    a_ss, g_s, a_bs, a_bb, g_b = _hold(a_ss, g_s, a_bs, a_bb, g_b, hs, hb)
    if n_blocks and ns:
        rhs = np.concatenate([a_bs, g_b[..., None]], axis=-1)  # (S, B, nb, ns+1)
        y, ok_b = spd_solve(a_bb, rhs)
        x_b, y_b = y[..., :ns], y[..., ns]
        a_sb = a_bs.transpose(0, 1, 3, 2)
        schur = a_ss - np.matmul(a_sb, x_b).sum(axis=1)
        rs = g_s - np.matmul(a_sb, y_b[..., None])[..., 0].sum(axis=1)
        d_s, ok_s = spd_solve(schur, rs[..., None])
        d_s = d_s[..., 0]
        d_b = y_b - np.matmul(x_b, d_s[:, None, :, None])[..., 0]
        ok = ok_s & ok_b.all(axis=1)
    elif n_blocks:
        d_b, ok_b = spd_solve(a_bb, g_b[..., None])
        d_b = d_b[..., 0]
        d_s = np.zeros((s, 0), dt)
        ok = ok_b.all(axis=1)
    else:
        d_s, ok = spd_solve(a_ss, g_s[..., None])
        d_s = d_s[..., 0]
    step[:, :nr] = d_s[:, :nr]
    if sep_dof_idx.size:
        step[:, nr + sep_dof_idx] = d_s[:, nr:]
    if n_blocks:
        step[:, nr + lay.blk_dof[lay.blk_dof_mask]] = d_b[:, lay.blk_dof_mask]
    step[~ok] = 0.0
    return step, bound
