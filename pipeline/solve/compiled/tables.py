"""The body plan as flat float64/int64 tables for the compiled kernels.

The kernels walk the tree one joint and one DOF at a time, so they need the plan as
plain arrays rather than the depth-grouped form the numpy engine uses
(:class:`pipeline.kinematics.plan_arrays.KinematicModel`).

State order is the numpy engine's: ``[root (n_root), dofs (n_dofs)]``, with the DOFs in
tree order. ``state_parent[s]`` is the state coordinate just above ``s`` on its path to
the root (the joint's previous DOF, else the last DOF of the nearest ancestor joint that
has DOFs, else the last root coordinate; -1 at the top), except where a coupled plan's
coupling reaches across branches
(:func:`~pipeline.kinematics.step_groups.elimination_parents`). The normal matrix is nonzero
only between a coordinate and its ``state_parent`` ancestors, which is what lets it be
factored leaves-first without fill (Featherstone's LTL factorization).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.plan_arrays import HINGE, _aligned_axis, compile_plan
from pipeline.kinematics.step_groups import step_groups
from pipeline.solve.compiled.coupled_tables import step_tables
from pipeline.solve.compiled.coupled_terms import correction_terms

__all__ = ["Tables", "tables"]


class Tables(NamedTuple):
    """Flat arrays of a body plan (see module docstring).

    Attributes
    ----------
    parent : (J,) int64
    offset_pos : (J, 3) float64
    offset_rot : (J, 3, 3) float64
    offset_identity : (J,) bool
        The joint's offset rotation is the identity (its product is skipped).
    dof_start : (J + 1,) int64
        DOFs of joint ``j`` are ``dof_start[j]:dof_start[j + 1]``.
    dof_type : (N,) int64
        ``HINGE``, ``SLIDE``, ``SWING1``, ``SWING2`` of :mod:`pipeline.kinematics.plan_arrays`.
    dof_axis : (N, 3) float64
    aligned : (N,) int64
        Coordinate axis (0, 1, 2) a hinge lies on (either sign), else -1: such a hinge
        mixes two columns of the frame instead of multiplying by a rotation matrix.
    axis_sign : (N,) float64
        Sign of an aligned hinge's axis; 1 elsewhere.
    dof_joint : (N,) int64
    angular : (N,) bool
    lower, upper, neutral, prior_scale : (N,) float64
    free_angle : (N,) bool
        Hinges without limits (wrapped into ``neutral +- pi`` when a frame starts).
    cone : (N, 2) float64
        A ball's cone half-angles (rad), at its first swing DOF.
    swing1 : (n_ball,) int64
        Each ball joint's first swing DOF.
    state_parent : (n_root + N,) int64
    ancestors : (n_root + N, max_depth) int64
        ``ancestors[s, :depth[s]]``: the coordinates above ``s``, nearest first. Those of
        ``ancestors[s, m]`` are ``ancestors[s, m + 1:depth[s]]``, which lets the
        factorization keep each row's entries contiguous.
    depth : (n_root + N,) int64
    local_depth : (n_root + N,) int64
        Number of DOF coordinates above ``s`` (its ancestors without the root's six,
        which come last in ``ancestors``); 0 for the root's own coordinates.
    n_root : int
    coupled : bool
        The plan has driven axes: forward kinematics walks its steps
        (:mod:`pipeline.solve.compiled.driven`), every DOF's screw is the chain-weighted
        sum of its steps' (``axes`` carry its rotation part, ``pivots`` its moment part).
    step_start, step_int, step_real, chain_fn, fn_int, fn_scale, fn_knots, extra_start,
    extra_joint
        The steps, function chains and extra screw groups of a coupled plan, packed
        (:func:`~pipeline.solve.compiled.coupled_tables.step_tables`); no steps otherwise.
    fix_int, fix_coef
        Terms added to the assembled normal matrix of a coupled plan where one screw per
        coordinate does not give it exactly (:mod:`.coupled_terms`); none otherwise.
    """

    parent: np.ndarray
    offset_pos: np.ndarray
    offset_rot: np.ndarray
    offset_identity: np.ndarray
    dof_start: np.ndarray
    dof_type: np.ndarray
    dof_axis: np.ndarray
    aligned: np.ndarray
    axis_sign: np.ndarray
    dof_joint: np.ndarray
    angular: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    neutral: np.ndarray
    prior_scale: np.ndarray
    free_angle: np.ndarray
    cone: np.ndarray
    swing1: np.ndarray
    state_parent: np.ndarray
    ancestors: np.ndarray
    depth: np.ndarray
    local_depth: np.ndarray
    n_root: int
    coupled: bool
    step_start: np.ndarray
    step_int: np.ndarray
    step_real: np.ndarray
    chain_fn: np.ndarray
    fn_int: np.ndarray
    fn_scale: np.ndarray
    fn_knots: np.ndarray
    extra_start: np.ndarray
    extra_joint: np.ndarray
    fix_int: np.ndarray
    fix_coef: np.ndarray


@lru_cache(maxsize=64)
def tables(plan: BodyPlan) -> Tables:
    """Flat tables of ``plan`` (cached).

    Parameters
    ----------
    plan : BodyPlan

    Returns
    -------
    Tables
    """
    m = compile_plan(plan, np.float64)
    n, nr = m.n_dofs, m.n_root
    counts = np.bincount(m.dof_joint, minlength=m.n_joints)
    dof_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    groups = step_groups(plan)
    state_parent = groups.state_parent
    chains = []
    for s in range(nr + n):
        chain, i = [], state_parent[s]
        while i >= 0:
            chain.append(i)
            i = state_parent[i]
        chains.append(chain)
    depth = np.array([len(c) for c in chains], np.int64)
    ancestors = np.zeros((nr + n, max(1, int(depth.max(initial=0)))), np.int64)
    for s, chain in enumerate(chains):
        ancestors[s, : len(chain)] = chain
    local_depth = np.maximum(depth - nr, 0) * (np.arange(nr + n) >= nr)
    cone = np.zeros((n, 2))
    if m.ball_swing.size:
        cone[m.ball_swing[:, 0]] = m.ball_cone
    aligned = np.full(n, -1, np.int64)
    for k in np.flatnonzero(m.dof_type == HINGE):
        aligned[k] = _aligned_axis(m.dof_axis[k])
    free_angle = np.zeros(n, bool)
    free_angle[m.free_angles] = True

    def f64(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.float64)

    return Tables(
        parent=m.parent.astype(np.int64),
        offset_pos=f64(m.offset_pos),
        offset_rot=f64(m.offset_rot),
        offset_identity=np.all(np.abs(m.offset_rot - np.eye(3)) == 0.0, axis=(1, 2)),
        dof_start=dof_start,
        dof_type=m.dof_type.astype(np.int64),
        dof_axis=f64(m.dof_axis),
        aligned=aligned,
        axis_sign=f64(m.axis_sign),
        dof_joint=m.dof_joint.astype(np.int64),
        angular=np.ascontiguousarray(m.angular),
        lower=f64(m.lower),
        upper=f64(m.upper),
        neutral=f64(m.neutral),
        prior_scale=f64(m.prior_scale),
        free_angle=free_angle,
        cone=cone,
        swing1=m.ball_swing[:, 0].astype(np.int64),
        state_parent=state_parent,
        ancestors=ancestors,
        depth=depth,
        local_depth=local_depth,
        n_root=nr,
        **step_tables(plan),
        **_fix_tables(plan, groups, ancestors, local_depth, nr),
    )


def _fix_tables(plan: BodyPlan, groups, ancestors, local_depth, nr) -> dict[str, np.ndarray]:
    """``fix_int`` and ``fix_coef`` (:func:`.coupled_terms.correction_terms`; none uncoupled)."""
    if not plan.coupled:
        return {"fix_int": np.zeros((0, 5), np.int64), "fix_coef": np.zeros(0, np.float64)}
    dof_joint = np.asarray(plan.dof_joint, np.int64)
    parent = plan.parent_indices
    fix_int, fix_coef = correction_terms(
        parent, groups.groups(dof_joint), ancestors, local_depth, nr
    )
    return {"fix_int": fix_int, "fix_coef": fix_coef}
