"""URDF import checked against Pinocchio's joint and link placements."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError
from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.importers import ConversionWarning, plan_unit
from pipeline.bodyplan.importers.urdf import import_urdf
from pipeline.kinematics import forward_kinematics

from .models import URDF, URDF_FILES, need

pin = need("pinocchio", "bench")  # the reference engine (pin is the bench extra)
need("yourdfpy", "urdf")


def _import(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_urdf(path, **options)


def _pin_config(model, plan, values: dict[str, float]) -> np.ndarray:
    q = pin.neutral(model)
    for jid in range(1, model.njoints):
        jm, v = model.joints[jid], values[model.names[jid]]
        if jm.nq == 2:  # continuous: cos, sin
            q[jm.idx_q : jm.idx_q + 2] = (np.cos(v), np.sin(v))
        else:
            q[jm.idx_q] = v
    return q


@pytest.mark.parametrize("name", URDF_FILES)
def test_placements_equal_pinocchio(name, rng):
    path = URDF / name
    plan = _import(path)
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    assert plan.n_dofs == model.njoints - 1
    for trial in range(11):
        values = {}
        for jid in range(1, model.njoints):
            k = plan.dof_names.index(model.names[jid])
            lo, hi = max(plan.lower[k], -np.pi), min(plan.upper[k], np.pi)
            values[model.names[jid]] = rng.uniform(lo, hi) if trial else 0.0
        pose = from_engine_configuration(plan, values)
        pin.forwardKinematics(model, data, _pin_config(model, plan, values))
        pin.updateFramePlacements(model, data)
        pos, rot = forward_kinematics(plan, pose.dof_values, return_rotations=True)
        for jid in range(1, model.njoints):  # joint placements = child link frames
            child = [f for f in model.frames if f.parentJoint == jid and f.type == pin.BODY][0]
            k = plan.joint_index(child.name)
            np.testing.assert_allclose(pos[k], data.oMi[jid].translation, atol=1e-9)
            np.testing.assert_allclose(rot[k], data.oMi[jid].rotation, atol=1e-9)
        for fid, frame in enumerate(model.frames):  # every link, fixed ones included
            if frame.type == pin.BODY:
                k = plan.joint_index(frame.name)
                np.testing.assert_allclose(pos[k], data.oMf[fid].translation, atol=1e-9)
        back = to_engine_configuration(plan, pose.dof_values)
        assert back == pytest.approx(values, abs=1e-12)


def test_continuous_is_unlimited_and_fixed_links_are_keypoints():
    plan = _import(URDF / "double_pendulum_continuous.urdf")
    assert np.all(np.isinf(plan.lower)) and np.all(np.isinf(plan.upper))
    g1 = _import(URDF / "unitree_g1_29dof_rev_1_0.urdf")
    assert {"imu_in_pelvis", "head_link", "d435_link", "left_rubber_hand"} <= set(g1.joint_names)
    assert plan_unit(g1) == "m" and g1.fixed_base
    knee = g1.dof_names.index("left_knee_joint")
    assert g1.lower[knee] < 0 < g1.upper[knee]


def test_merge_fixed_and_floating_root():
    full = _import(URDF / "unitree_g1_29dof_rev_1_0.urdf")
    merged = _import(URDF / "unitree_g1_29dof_rev_1_0.urdf", merge_fixed=True)
    assert "imu_in_pelvis" not in merged.joint_names and merged.n_dofs == full.n_dofs
    a = forward_kinematics(full, np.full(full.n_dofs, 0.1))
    b = forward_kinematics(merged, np.full(merged.n_dofs, 0.1))
    idx = [full.joint_index(n) for n in merged.joint_names]
    np.testing.assert_allclose(a[idx], b, atol=1e-12)
    free = _import(URDF / "unitree_h1.urdf", fixed_base=False)
    assert not free.fixed_base


def test_mimic_joints_are_reported():
    with pytest.warns(
        ConversionWarning,
        match=r"<joint name=\"panda_finger_joint2\"> \(line \d+\)"
        r".*couples 'panda_finger_joint2' to 'panda_finger_joint1'",
    ):
        plan = import_urdf(URDF / "franka_panda.urdf")
    assert plan.extras["x-source"]["mimic"][0]["follows"] == "panda_finger_joint1"
    assert "panda_finger_joint2" in plan.dof_names  # kept as an independent DOF
    with pytest.raises(BodyPlanError, match="panda_finger_joint2.*strict import refuses it"):
        import_urdf(URDF / "franka_panda.urdf", strict=True)


LINKS = '<link name="a"/><link name="b"/><link name="c"/>'


@pytest.mark.parametrize(
    ("joints", "match"),
    [
        (
            '<joint name="ab" type="revolute"><parent link="a"/><child link="b"/>'
            '<limit lower="0" upper="1" effort="1" velocity="1"/></joint>'
            '<joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>'
            '<joint name="ac" type="fixed"><parent link="a"/><child link="c"/></joint>',
            r"loop\.urdf: <joint name=\"ac\"> \(line 1\): link 'c' already has parent joint 'bc'"
            r".*closed kinematic loop",
        ),
        (
            '<joint name="ab" type="helical"><parent link="a"/><child link="b"/></joint>',
            r"loop\.urdf: <joint name=\"ab\"> \(line 1\): type 'helical' is not one of revolute, "
            "continuous, prismatic, fixed, floating, planar",
        ),
        (
            '<joint name="ab" type="floating"><parent link="a"/><child link="b"/></joint>'
            '<joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>',
            r"<joint name=\"ab\"> \(line 1\): a floating joint below the root has no body-plan",
        ),
    ],
)
def test_bad_urdf_names_file_joint_and_line(tmp_path, joints, match):
    path = tmp_path / "loop.urdf"
    path.write_text(f'<robot name="r">{LINKS}{joints}</robot>')
    with pytest.raises(BodyPlanError, match=match):
        import_urdf(path)


def test_truncated_urdf_names_line(tmp_path):
    text = (URDF / "double_pendulum_continuous.urdf").read_text()
    path = tmp_path / "cut.urdf"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(BodyPlanError, match=r"cut\.urdf: not a well-formed URDF XML file: .* line"):
        import_urdf(path)
