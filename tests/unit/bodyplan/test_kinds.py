"""Version-2 joint kinds: stored fields and the DOFs derived from them."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from pipeline.bodyplan import KINDS, Dof, JointKind, body_plan_to_dict, load_body_plan
from pipeline.bodyplan.kinds import derive_dofs
from pipeline.kinematics.rotations import orthonormal_basis
from tests.fixtures.bodyplan_samples import small_v2


@pytest.fixture
def plan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_body_plan(small_v2())


def test_kinds_constant():
    assert KINDS == ("fixed", "hinge", "ball", "universal", "prismatic")


def test_fixed_has_no_dofs(plan):
    base = plan.joints[0]
    assert base.kind == JointKind(kind="fixed")
    assert base.dofs == ()


def test_prismatic_is_one_slide(plan):
    slider = plan.joints[1]
    assert slider.kind == JointKind(
        kind="prismatic", axis=(0.0, 0.0, 1.0), limits=(-0.1, 0.2), neutral=(0.05,)
    )
    assert slider.dofs == (Dof("slide", (0.0, 0.0, 1.0), 0.05, (-0.1, 0.2), 1.0),)


def test_ball_is_swing_swing_twist(plan):
    shoulder = plan.joints[2]
    assert shoulder.kind == JointKind(
        kind="ball",
        axis=(1.0, 0.0, 0.0),
        swing_limit=(1.0, 0.5),
        twist_limit=(-1.0, 1.0),
        neutral=(0.1, 0.2, 0.3),
    )
    b1, b2 = orthonormal_basis(np.array([1.0, 0.0, 0.0]))
    swing_y, swing_z, twist = shoulder.dofs
    assert swing_y == Dof("swing", tuple(b1), 0.1, None, 1.0, "shoulder/swing_y")
    assert swing_z == Dof("swing", tuple(b2), 0.2, None, 1.0, "shoulder/swing_z")
    assert twist == Dof("hinge", (1.0, 0.0, 0.0), 0.3, (-1.0, 1.0), 1.0, "shoulder/twist")
    # for twist axis +x the swing basis is (y, z)
    np.testing.assert_allclose([b1, b2], [[0, 1, 0], [0, 0, 1]])


def test_hinge_carries_its_prior_weight_on_the_dof(plan):
    elbow = plan.joints[3]
    assert elbow.weight_scaler == 0.5  # observation weight of the keypoint
    assert elbow.kind.weight_scaler == 2.0
    assert elbow.dofs == (Dof("hinge", (0.0, 0.0, 1.0), 0.5, (0.0, 2.5), 2.0),)


def test_universal_orthogonalizes_secondary(plan):
    wrist = plan.joints[4]
    assert wrist.kind.axes == ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0))
    assert wrist.kind.limits == ((-1.0, 1.0), None)
    primary, secondary = wrist.dofs
    assert primary == Dof("hinge", (0.0, 0.0, 1.0), 0.2, (-1.0, 1.0), 1.0)
    assert secondary == Dof("hinge", (1.0, 0.0, 0.0), 0.0, None, 1.0)


def test_plan_arrays_follow_the_derived_dofs(plan):
    assert plan.dof_names == (
        "slider/0",
        "shoulder/swing_y",
        "shoulder/swing_z",
        "shoulder/twist",
        "elbow/0",
        "wrist/0",
        "wrist/1",
        "knuckle/0",
    )
    inf = np.inf
    np.testing.assert_array_equal(plan.lower, [-0.1, -inf, -inf, -1, 0, -1, -inf, -0.5])
    np.testing.assert_array_equal(plan.upper, [0.2, inf, inf, 1, 2.5, 1, inf, 1.5])
    np.testing.assert_array_equal(plan.neutral, [0.05, 0.1, 0.2, 0.3, 0.5, 0.2, 0, 0])
    np.testing.assert_array_equal(plan.dof_weight_scalers, [1, 1, 1, 1, 2, 1, 1, 1])
    np.testing.assert_array_equal(plan.dof_joint, [1, 2, 2, 2, 3, 4, 4, 5])


def test_defaults_for_optional_kind_fields():
    data = small_v2()
    for key in ("swing_limit", "twist_limit", "neutral"):
        del data["joints"][2][key]
    for key in ("limits", "neutral"):
        del data["joints"][3][key]
        del data["joints"][4][key]
    plan = load_body_plan(data)
    shoulder, elbow, wrist = plan.joints[2:5]
    assert shoulder.kind.swing_limit is None and shoulder.kind.twist_limit is None
    assert shoulder.kind.neutral == (0.0, 0.0, 0.0)
    assert elbow.kind.limits is None and elbow.dofs[0].limits is None
    assert elbow.kind.neutral == (0.0,)
    assert wrist.kind.limits is None and wrist.kind.neutral == (0.0, 0.0)
    assert plan == load_body_plan(body_plan_to_dict(plan))
    saved = body_plan_to_dict(plan)["joints"][2]
    assert "swing_limit" not in saved and "twist_limit" not in saved


def test_circular_swing_limit_is_stored_twice_and_saved_once():
    data = small_v2()
    data["joints"][2]["swing_limit"] = math.pi
    data["joints"][2]["neutral"] = [0, 0, 0]
    plan = load_body_plan(data)
    assert plan.joints[2].kind.swing_limit == (math.pi, math.pi)
    assert body_plan_to_dict(plan)["joints"][2]["swing_limit"] == math.pi


def test_neutral_on_the_cone_boundary_is_accepted():
    data = small_v2()
    data["joints"][2]["neutral"] = [1.0 * math.cos(0.3), 0.5 * math.sin(0.3), 0.0]
    load_body_plan(data)


@pytest.mark.parametrize(
    ("kind", "n"),
    [
        (JointKind("fixed"), 0),
        (JointKind("hinge", axis=(0.0, 1.0, 0.0), neutral=(0.0,)), 1),
        (JointKind("prismatic", axis=(0.0, 1.0, 0.0), neutral=(0.0,)), 1),
        (JointKind("ball", axis=(0.0, 1.0, 0.0), neutral=(0.0, 0.0, 0.0)), 3),
        (JointKind("universal", axes=((1.0, 0, 0), (0, 1.0, 0)), neutral=(0.0, 0.0)), 2),
    ],
)
def test_derive_dofs_counts(kind, n):
    dofs = derive_dofs("j", kind)
    assert len(dofs) == n
    for dof in dofs:
        assert math.isclose(np.linalg.norm(dof.axis), 1.0)


def test_ball_swing_axes_are_orthonormal_to_the_twist_axis():
    axis = tuple(np.array([0.3, -0.8, 0.2]) / np.linalg.norm([0.3, -0.8, 0.2]))
    swing_y, swing_z, twist = derive_dofs("j", JointKind("ball", axis=axis, neutral=(0, 0, 0)))
    frame = np.array([twist.axis, swing_y.axis, swing_z.axis])
    np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(frame) > 0  # (axis, b1, b2) right-handed
