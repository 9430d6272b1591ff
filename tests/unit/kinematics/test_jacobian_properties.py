"""Analytic Jacobians equal central finite differences on random body plans."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.kinematics import forward_kinematics, jacobian
from pipeline.kinematics.rotations import quat_multiply, rotvec_to_quat
from tests.fixtures.plan_factory import random_plan, random_pose


def numeric_jacobian(plan, q, root_pos, quat, eps=1e-6):
    n_root = 0 if plan.fixed_base else 6
    cols = []
    for c in range(n_root + plan.n_dofs):
        d = np.zeros(n_root + plan.n_dofs)
        d[c] = eps

        def f(delta):
            if n_root:
                rq = quat_multiply(
                    rotvec_to_quat(np.broadcast_to(delta[3:6], root_pos.shape)), quat
                )
                return forward_kinematics(plan, q + delta[n_root:], root_pos + delta[:3], rq)
            return forward_kinematics(plan, q + delta, root_pos, quat)

        cols.append((f(d) - f(-d)) / (2 * eps))
    return np.stack(cols, axis=-1)


def check(plan, rng, scale=0.6):
    q, root_pos, quat = random_pose(plan, rng, n=3, scale=scale)
    analytic = jacobian(plan, q, root_pos, quat)
    numeric = numeric_jacobian(plan, q, root_pos, quat)
    assert analytic.shape == numeric.shape
    np.testing.assert_allclose(analytic, numeric, atol=2e-7, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fixed=st.booleans())
def test_hinges_and_slides(seed, fixed):
    rng = np.random.default_rng(seed)
    check(random_plan(rng, n_joints=7, fixed_base=fixed), rng)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fixed=st.booleans())
def test_joint_kinds_at_random_poses(seed, fixed):
    rng = np.random.default_rng(seed)
    check(random_plan(rng, n_joints=7, kinds=True, fixed_base=fixed), rng)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_joint_kinds_at_rest(seed):
    rng = np.random.default_rng(seed)
    check(random_plan(rng, n_joints=7, kinds=True), rng, scale=0.0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_joint_kinds_near_limits(seed):
    """Poses pushed far out and clamped back sit on the limits (cone boundary)."""
    rng = np.random.default_rng(seed)
    check(random_plan(rng, n_joints=7, kinds=True), rng, scale=5.0)
