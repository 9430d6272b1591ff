"""Scratch arrays of the lane kernel (:mod:`.lane_frames`): :mod:`.bundles`' lane forms."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.solve.compiled.lane_forward import LANES
from pipeline.solve.compiled.tables import Tables

__all__ = ["LaneWorkspace", "lane_workspace"]


class LaneWorkspace(NamedTuple):
    """Scratch of the lane loop: :class:`~.bundles.Workspace`'s, lane axis last."""

    q: np.ndarray  # (N, L) current poses ...
    rp: np.ndarray  # (3, L)
    rq: np.ndarray  # (4, L)
    half: np.ndarray  # (2, N, L)
    act: np.ndarray  # (N, L) bool
    q_new: np.ndarray  # (N, L) ... and the candidates
    rp_new: np.ndarray  # (3, L)
    rq_new: np.ndarray  # (4, L)
    half_new: np.ndarray  # (2, N, L)
    act_new: np.ndarray  # (N, L) bool
    obs: np.ndarray  # (J, 3, L) each lane's frame's targets ...
    weight: np.ndarray  # (J, L) ... weights ...
    task_target: np.ndarray  # (N, L) ... and coordinate-task targets
    root_rot: np.ndarray  # (9, L)
    rot: np.ndarray  # (J, 9, L)
    org: np.ndarray  # (J, 3, L)
    pos: np.ndarray  # (J, 3, L)
    axes: np.ndarray  # (N, 3, L)
    pivots: np.ndarray  # (N, 3, L)
    r: np.ndarray  # (9, L) a joint's running frame
    o: np.ndarray  # (3, L) ... and origin
    res: np.ndarray  # (J, 3, L)
    weff: np.ndarray  # (J, L)
    mom: np.ndarray  # (J + 1, 16, L)
    xi: np.ndarray  # (n_state, 6, L)
    own: np.ndarray  # (J, 16, L) each keypoint's own moments
    f: np.ndarray  # (n_state, 6, L)
    hd: np.ndarray  # (n_state, L)
    hc: np.ndarray  # (n_state, max_depth, L)
    hr: np.ndarray  # (n_state, 6, L)
    g: np.ndarray  # (n_state, L)
    step: np.ndarray  # (n_state, L)
    sums: np.ndarray  # (2, L) the objective's prior and task sums
    lane: np.ndarray  # (14, L) float64: per-lane scalars (see solve_lanes_kernel)
    ok: np.ndarray  # (6, L) bool: per-lane flags
    rot3: np.ndarray  # (3, 3)


def lane_workspace(tb: Tables) -> LaneWorkspace:
    """Fresh lane scratch for the plan of ``tb`` (a plan without driven axes)."""
    nj = tb.parent.shape[0]
    n = tb.dof_type.shape[0]
    ns = tb.n_root + n
    L = LANES
    return LaneWorkspace(
        q=np.zeros((n, L)),
        rp=np.zeros((3, L)),
        rq=np.zeros((4, L)),
        half=np.zeros((2, n, L)),
        act=np.zeros((n, L), np.bool_),
        q_new=np.zeros((n, L)),
        rp_new=np.zeros((3, L)),
        rq_new=np.zeros((4, L)),
        half_new=np.zeros((2, n, L)),
        act_new=np.zeros((n, L), np.bool_),
        obs=np.zeros((nj, 3, L)),
        weight=np.zeros((nj, L)),
        task_target=np.zeros((n, L)),
        root_rot=np.zeros((9, L)),
        rot=np.zeros((nj, 9, L)),
        org=np.zeros((nj, 3, L)),
        pos=np.zeros((nj, 3, L)),
        axes=np.zeros((n, 3, L)),
        pivots=np.zeros((n, 3, L)),
        r=np.zeros((9, L)),
        o=np.zeros((3, L)),
        res=np.zeros((nj, 3, L)),
        weff=np.zeros((nj, L)),
        mom=np.zeros((nj + 1, 16, L)),
        xi=np.zeros((ns, 6, L)),
        own=np.zeros((nj, 16, L)),
        f=np.zeros((ns, 6, L)),
        hd=np.zeros((ns, L)),
        hc=np.zeros((ns, tb.ancestors.shape[1], L)),
        hr=np.zeros((ns, 6, L)),
        g=np.zeros((ns, L)),
        step=np.zeros((ns, L)),
        sums=np.zeros((2, L)),
        lane=np.zeros((14, L)),
        ok=np.zeros((6, L), np.bool_),
        rot3=np.zeros((3, 3)),
    )
