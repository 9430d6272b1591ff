"""Clamp on write: box limits and ball cones project onto their boundary."""

from __future__ import annotations

import numpy as np

from pipeline.kinematics import joint_rotations_local
from pipeline.kinematics.plan_arrays import compile_plan
from pipeline.kinematics.rotations import quat_to_rotvec, swing_twist
from pipeline.solve.numpy.pose import clamp
from tests.fixtures.plan_factory import joint, random_plan, v2_plan


def ball_arm():
    return v2_plan(
        joint("root", None, kind="fixed"),
        joint(
            "shoulder",
            "root",
            kind="ball",
            axis=[1, 0, 0],
            swing_limit=[0.6, 1.2],
            twist_limit=[-0.5, 0.4],
        ),
        joint("elbow", "shoulder", (0.3, 0, 0), kind="hinge", axis=[0, 0, 1], limits=[0.0, 2.5]),
        joint("hand", "elbow", (0.25, 0, 0), kind="fixed"),
    )


def test_cone_projection_lands_on_the_ellipse_and_is_idempotent(rng):
    plan = ball_arm()
    model = compile_plan(plan)
    q = rng.normal(size=(500, plan.n_dofs)) * 3.0
    out, active = clamp(model, q)
    sw = out[:, :2]
    e = (sw[:, 0] / 0.6) ** 2 + (sw[:, 1] / 1.2) ** 2
    outside = active[:, 0]
    np.testing.assert_allclose(e[outside], 1.0, atol=1e-12)
    assert np.all(e <= 1.0 + 1e-12)
    # radial: the clamped swing is parallel to the (wrapped) input swing
    theta = np.linalg.norm(q[:, :2], axis=1)
    assert np.all(out[:, 2] >= -0.5) and np.all(out[:, 2] <= 0.4)
    assert np.all(out[:, 3] >= 0.0) and np.all(out[:, 3] <= 2.5)
    again, active2 = clamp(model, out)
    np.testing.assert_array_equal(again, out)
    assert not active2.any()
    assert theta.max() > np.pi  # the draw did exercise the wrap


def test_swing_beyond_pi_wraps_to_the_same_rotation():
    big = _unbounded()
    q = np.array([[3.5, 0.0, 0.0]])
    q_wrapped, _ = clamp(compile_plan(big), q)
    np.testing.assert_allclose(q_wrapped[0, 0], 3.5 - 2 * np.pi)
    # same rotation: quaternions equal up to sign
    a = joint_rotations_local(big, q_wrapped)[0, 1]
    b = joint_rotations_local(big, q)[0, 1]
    np.testing.assert_allclose(abs(a @ b), 1.0, atol=1e-12)


def _unbounded():
    return v2_plan(
        joint("root", None, kind="fixed"),
        joint("ball", "root", kind="ball", axis=[1, 0, 0]),
        joint("tip", "ball", (1, 0.2, 0), kind="fixed"),
    )


def test_clamped_ball_rotation_decomposes_inside_its_limits(rng):
    """The canonical pose (joint_rotation) of a clamped ball stays in its cone and twist."""
    plan = ball_arm()
    model = compile_plan(plan)
    q, _ = clamp(model, rng.normal(size=(300, plan.n_dofs)) * 3.0)
    quat = joint_rotations_local(plan, q)[:, 1]
    swing, twist = swing_twist(quat, np.array([1.0, 0, 0]))
    sv = quat_to_rotvec(swing)
    e = (sv[:, 1] / 0.6) ** 2 + (sv[:, 2] / 1.2) ** 2
    assert np.all(e <= 1 + 1e-9)
    tw = quat_to_rotvec(twist)[:, 0]
    assert np.all(tw >= -0.5 - 1e-9) and np.all(tw <= 0.4 + 1e-9)


def test_random_plans_clamp_into_box_limits(rng):
    plan = random_plan(rng, n_joints=8, limits=True)
    model = compile_plan(plan)
    q, active = clamp(model, rng.normal(size=(50, plan.n_dofs)) * 4)
    assert np.all(q >= plan.lower) and np.all(q <= plan.upper)
    assert active.any()
