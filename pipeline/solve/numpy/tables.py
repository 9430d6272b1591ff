"""Index tables of the block-arrow normal equations (once per model), and their blocks.

See :mod:`pipeline.solve.numpy.normal` for the structure they describe; the compiled
engine's tables are :mod:`pipeline.solve.compiled.tables`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from pipeline.kinematics.plan_arrays import SLIDE, KinematicModel
from pipeline.solve.limits import held_coordinates

__all__ = ["BlockLayout", "NormalBlocks", "block_layout"]


@dataclass(frozen=True, eq=False)
class BlockLayout:
    """Index tables of the block-arrow normal equations (padded to equal block sizes).

    Attributes
    ----------
    n_sep : int
        Separator columns: root coordinates then ``sep_dofs``.
    blk_dof, blk_dof_mask : (B, nb)
        DOFs of each block (padded; mask False on padding).
    blk_kp, blk_kp_mask : (B, kb)
        Keypoints of each block (padded).
    pair_* : (P,)
        For each (block keypoint, DOF that moves it): block, keypoint slot, column in the
        block's ``[separator | block DOFs]`` layout, keypoint index, DOF index, is-slide.
    sep_kp : (K0,)
        Keypoints outside every block (they depend on separator columns only).
    sep_pair_* : (P0,)
        Same as ``pair_*`` for ``sep_kp`` (slot into ``sep_kp``, separator column).
    strict_desc : (J, J)
        ``strict_desc[i, j] = 1`` when keypoint ``i`` lies strictly below joint ``j``
        (the keypoints joint ``j``'s DOFs move).
    blk_upper : (B, nb, nb) bool
        Block DOF pairs ``k <= l`` on one path (``l`` at or below ``k``'s joint).
    sep_held : (H0,)
        Separator columns of held coordinates (:func:`pipeline.solve.limits.held`).
    blk_held : (B, nb) bool
        Block DOFs that are held (False on padding).
    """

    n_sep: int
    blk_dof: np.ndarray
    blk_dof_mask: np.ndarray
    blk_kp: np.ndarray
    blk_kp_mask: np.ndarray
    pair_block: np.ndarray
    pair_slot: np.ndarray
    pair_col: np.ndarray
    pair_kp: np.ndarray
    pair_dof: np.ndarray
    pair_slide: np.ndarray
    sep_kp: np.ndarray
    sep_pair_slot: np.ndarray
    sep_pair_col: np.ndarray
    sep_pair_kp: np.ndarray
    sep_pair_dof: np.ndarray
    sep_pair_slide: np.ndarray
    strict_desc: np.ndarray
    blk_upper: np.ndarray
    sep_held: np.ndarray
    blk_held: np.ndarray


@lru_cache(maxsize=64)
def block_layout(model: KinematicModel) -> BlockLayout:
    """Index tables for ``model`` (cached)."""
    nr = model.n_root
    sep_col = {int(k): nr + i for i, k in enumerate(model.sep_dofs)}
    n_sep = nr + len(model.sep_dofs)
    nb = max((len(d) for d, _ in model.blocks), default=0)
    kb = max((len(k) for _, k in model.blocks), default=0)
    n_blocks = len(model.blocks)
    blk_dof = np.zeros((n_blocks, nb), np.intp)
    blk_dof_mask = np.zeros((n_blocks, nb), bool)
    blk_kp = np.zeros((n_blocks, kb), np.intp)
    blk_kp_mask = np.zeros((n_blocks, kb), bool)
    pairs: list[tuple[int, int, int, int, int]] = []
    for b, (dofs, kps) in enumerate(model.blocks):
        blk_dof[b, : len(dofs)] = dofs
        blk_dof_mask[b, : len(dofs)] = True
        blk_kp[b, : len(kps)] = kps
        blk_kp_mask[b, : len(kps)] = True
        col = {int(k): n_sep + i for i, k in enumerate(dofs)} | sep_col
        for slot, i in enumerate(kps):
            for k in model.anc_dofs[i]:
                pairs.append((b, slot, col[int(k)], int(i), int(k)))
    sep_pairs = [
        (slot, sep_col[int(k)], int(i), int(k))
        for slot, i in enumerate(model.sep_keypoints)
        for k in model.anc_dofs[i]
    ]
    n = model.n_joints
    strict_desc = np.zeros((n, n))
    for i in range(n):
        j = model.parent[i]
        while j >= 0:
            strict_desc[i, j] = 1.0
            j = model.parent[j]
    blk_upper = np.zeros((n_blocks, nb, nb), bool)
    for b, (dofs, _) in enumerate(model.blocks):
        for x, k in enumerate(dofs):
            for y, k2 in enumerate(dofs):
                jk, jl = model.dof_joint[k], model.dof_joint[k2]
                if k <= k2 and (jk == jl or strict_desc[jl, jk]):
                    blk_upper[b, x, y] = True
    is_held = held_coordinates(
        np.asarray(model.lower, np.float64), np.asarray(model.upper, np.float64)
    )
    p = np.array(pairs, dtype=np.intp).reshape(-1, 5)
    p0 = np.array(sep_pairs, dtype=np.intp).reshape(-1, 4)
    return BlockLayout(
        n_sep=n_sep,
        blk_dof=blk_dof,
        blk_dof_mask=blk_dof_mask,
        blk_kp=blk_kp,
        blk_kp_mask=blk_kp_mask,
        pair_block=p[:, 0],
        pair_slot=p[:, 1],
        pair_col=p[:, 2],
        pair_kp=p[:, 3],
        pair_dof=p[:, 4],
        pair_slide=model.dof_type[p[:, 4]] == SLIDE,
        sep_kp=np.asarray(model.sep_keypoints, np.intp),
        sep_pair_slot=p0[:, 0],
        sep_pair_col=p0[:, 1],
        sep_pair_kp=p0[:, 2],
        sep_pair_dof=p0[:, 3],
        sep_pair_slide=model.dof_type[p0[:, 3]] == SLIDE,
        strict_desc=strict_desc.astype(model.dtype),
        blk_upper=blk_upper,
        sep_held=nr + np.flatnonzero(is_held[np.asarray(model.sep_dofs, np.intp)]),
        blk_held=is_held[blk_dof] & blk_dof_mask,
    )


class NormalBlocks(NamedTuple):
    """Gauss-Newton normal equations in block-arrow form (no prior, no damping).

    Attributes
    ----------
    a_ss : (S, ns, ns)
        Separator block.
    g_s : (S, ns)
        Separator gradient ``J^T W r``.
    a_bs : (S, B, nb, ns)
        Block-separator coupling.
    a_bb : (S, B, nb, nb)
        Block diagonal.
    g_b : (S, B, nb)
        Block gradients.
    """

    a_ss: np.ndarray
    g_s: np.ndarray
    a_bs: np.ndarray
    a_bb: np.ndarray
    g_b: np.ndarray
