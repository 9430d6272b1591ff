"""Normal equations of 3D observations from subtree moments (no Jacobian rows).

Every DOF column of the keypoint Jacobian is a screw: a rotational DOF with world axis
``u`` through ``o`` moves keypoint ``p`` by ``u x (p - o) = S(p) xi`` with
``xi = (u, o x u)`` and ``S(p) = [-[p]x, I]``; a slide along ``u`` is ``xi = (0, u)``.
For 3D observations with scalar weights the normal-matrix entry of two DOFs on one path
is therefore

    A_kl = sum_{i below l} w_i xi_k^T S(p_i)^T S(p_i) xi_l = xi_k^T Phi_l xi_l,

where ``Phi_l`` (6x6) depends only on the moments ``sum w``, ``sum w p`` and
``sum w p p^T`` of the keypoints that DOF ``l`` moves, and the gradient is
``g_k = xi_k . (sum w p x r, sum w r)`` over the keypoints below ``k``. The moments of
every subtree come from one matrix product with the descendant table, so assembling the
whole block-arrow system costs a few numpy calls over all frames, the same idea as the
composite-rigid-body algorithm. Positions are taken relative to the root position to
keep float32 moments well conditioned.
"""

from __future__ import annotations

import numpy as np

from pipeline.kinematics.fk_jacobian import FKState
from pipeline.kinematics.plan_arrays import KinematicModel
from pipeline.solve.numpy.tables import NormalBlocks, block_layout

__all__ = ["assemble_moments"]

#: Rows of the root's 6 screws in Phi order (angular, linear): translations then rotations.
_ROOT_ROWS = np.array([3, 4, 5, 0, 1, 2])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products of component-major vectors ``(3, ...)``."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    np.multiply(a[1], b[2], out=out[0])
    out[0] -= a[2] * b[1]
    np.multiply(a[2], b[0], out=out[1])
    out[1] -= a[0] * b[2]
    np.multiply(a[0], b[1], out=out[2])
    out[2] -= a[1] * b[0]
    return out


def _phi_times(mom: np.ndarray, a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``Phi @ (a, m)`` for moments ``mom (16, ...)`` and screws ``a, m (3, ...)``.

    ``Phi = [[tr(M2) I - M2, [m1]x], [-[m1]x, m0 I]]``.
    """
    m0, m1 = mom[0], mom[1:4]
    xx, yy, zz, xy, xz, yz = mom[4], mom[5], mom[6], mom[7], mom[8], mom[9]
    tr = xx + yy + zz
    m2a = np.stack(
        [
            xx * a[0] + xy * a[1] + xz * a[2],
            xy * a[0] + yy * a[1] + yz * a[2],
            xz * a[0] + yz * a[1] + zz * a[2],
        ]
    )
    top = tr * a - m2a + _cross(m1, m)
    bottom = m0 * m - _cross(m1, a)
    return np.concatenate([top, bottom])


def _moments(p: np.ndarray, w: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per-keypoint moment channels ``(16, S, J)``.

    Channels: ``w``, ``w p`` (3), ``w p p^T`` (xx, yy, zz, xy, xz, yz), ``w p x r`` (3),
    ``w r`` (3).
    """
    pc = p.transpose(2, 0, 1)  # (3, S, J)
    wr = w * r.transpose(2, 0, 1)
    wp = w * pc
    return np.concatenate(
        [
            w[None],
            wp,
            np.stack(
                [
                    wp[0] * pc[0],
                    wp[1] * pc[1],
                    wp[2] * pc[2],
                    wp[0] * pc[1],
                    wp[0] * pc[2],
                    wp[1] * pc[2],
                ]
            ),
            _cross(pc, wr),
            wr,
        ]
    )


def assemble_moments(
    model: KinematicModel, st: FKState, residual: np.ndarray, weight: np.ndarray
) -> NormalBlocks:
    """Block-arrow normal equations of direct 3D observations.

    Parameters
    ----------
    model : KinematicModel
    st : FKState
        Forward pass with DOF axes and pivots.
    residual : (S, J, 3)
        ``target - fk``, zero where missing.
    weight : (S, J)
        Effective weights, zero where missing.

    Returns
    -------
    NormalBlocks
        Equal (to round-off) to :func:`pipeline.solve.numpy.normal.assemble_rows` with no
        mapper.
    """
    lay = block_layout(model)
    dt = model.dtype
    s = weight.shape[0]
    nr, ns = model.n_root, lay.n_sep
    n_blocks, nb = lay.blk_dof.shape
    c = st.root_position
    own = _moments(st.positions - c[:, None], weight, residual)  # (16, S, J)
    sub = np.matmul(own, lay.strict_desc)  # moments of the keypoints below each joint
    mom = sub[:, :, model.dof_joint]  # (16, S, N)

    u = st.axes.transpose(2, 0, 1)  # (3, S, N)
    o = (st.pivots - c[:, None]).transpose(2, 0, 1)
    rot = model.angular
    a = np.where(rot, u, 0.0)
    m = np.where(rot, _cross(o, u), u)
    xi = np.concatenate([a, m]).transpose(1, 2, 0)  # (S, N, 6)
    f = _phi_times(mom, a, m).transpose(1, 2, 0)  # (S, N, 6)
    g = np.sum(a * mom[10:13] + m * mom[13:16], axis=0)  # (S, N)

    # separator: the root's 6 screws (Phi over all keypoints) and the separator DOFs
    sep = model.sep_dofs
    xi_s = np.zeros((s, ns, 6), dt)
    f_s = np.zeros((s, ns, 6), dt)
    g_s = np.zeros((s, ns), dt)
    if nr:
        total = own.sum(axis=-1)  # (16, S)
        eye = np.eye(3, dtype=dt)[:, :, None]
        zero = np.zeros((3, 3, 1), dt)
        # translations: (a, m) = (0, e_k); rotations about the root: (e_k, 0)
        f_trans = _phi_times(total[:, None], zero, eye)  # (6, 3, S)
        f_rot = _phi_times(total[:, None], eye, zero)
        f_s[:, :3] = f_trans.transpose(2, 1, 0)
        f_s[:, 3:6] = f_rot.transpose(2, 1, 0)
        xi_s[:, :6] = np.eye(6, dtype=dt)[_ROOT_ROWS]
        g_s[:, :3] = total[13:16].T
        g_s[:, 3:6] = total[10:13].T
    if sep.size:
        xi_s[:, nr:] = xi[:, sep]
        f_s[:, nr:] = f[:, sep]
        g_s[:, nr:] = g[:, sep]
    gram = np.matmul(xi_s, f_s.transpose(0, 2, 1))  # (S, ns, ns): xi_i . F_j
    upper = np.triu(gram)
    a_ss = upper + np.triu(gram, 1).transpose(0, 2, 1)

    if not n_blocks:
        empty = np.zeros((s, 0, 0), dt)
        return NormalBlocks(a_ss, g_s, empty[..., None], empty[..., None], empty)
    mask = lay.blk_dof_mask
    xi_b = xi[:, lay.blk_dof]  # (S, B, nb, 6)
    f_b = f[:, lay.blk_dof]
    f_bt = np.ascontiguousarray(f_b.transpose(0, 1, 3, 2))
    # rows of the root's screws select components of F: a gather, not a product
    a_bs = np.empty((s, n_blocks, nb, ns), dt)
    a_bs[..., :nr] = f_b[..., _ROOT_ROWS[:nr]]
    if sep.size:
        a_bs[..., nr:] = np.swapaxes(np.matmul(xi_s[:, None, nr:], f_bt), -1, -2)
    a_bs *= mask[..., None]
    gram_b = np.matmul(xi_b, f_bt) * lay.blk_upper  # (S, B, nb, nb), k <= l on one path
    a_bb = gram_b + np.swapaxes(gram_b, -1, -2)
    idx = np.arange(nb)
    a_bb[..., idx, idx] *= 0.5
    g_b = g[:, lay.blk_dof] * mask
    return NormalBlocks(a_ss, g_s, a_bs, a_bb, g_b)
