"""Forward kinematics against hand-computed points and the fly's known angles."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.kinematics import forward_kinematics, joint_rotations_local
from pipeline.kinematics.rotations import quat_to_matrix
from tests.fixtures.plan_factory import chain_plan, random_plan, random_pose


@pytest.fixture(scope="module")
def fly(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture(scope="module")
def fixtures(quickik_dir):
    return json.loads((quickik_dir / "fixtures.json").read_text())


def test_chain_at_rest_lies_on_x():
    plan = chain_plan()
    p = forward_kinematics(plan, np.zeros(2))
    np.testing.assert_allclose(p, [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], atol=1e-15)


def test_chain_90_degree_bend_puts_tip_at_2_1_0():
    plan = chain_plan()
    p = forward_kinematics(plan, np.array([0.0, np.pi / 2]))
    # b's own keypoint does not move with b's DOF; only the tip does
    np.testing.assert_allclose(p[2], [2, 0, 0], atol=1e-15)
    np.testing.assert_allclose(p[3], [2, 1, 0], atol=1e-15)


def test_chain_first_joint_moves_every_descendant():
    plan = chain_plan()
    p = forward_kinematics(plan, np.array([np.pi / 2, 0.0]))
    np.testing.assert_allclose(p[1:], [[1, 0, 0], [1, 1, 0], [1, 2, 0]], atol=1e-15)


def test_slide_moves_children_origin_only():
    plan = load_body_plan(
        {
            "fixed_base": True,
            "joints": [
                {
                    "name": "r",
                    "parent": None,
                    "offset_pos": [0, 0, 0],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [{"type": "slide", "axis": [0, 1, 0], "neutral": 0.0}],
                },
                {
                    "name": "c",
                    "parent": "r",
                    "offset_pos": [1, 0, 0],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [],
                },
            ],
        }
    )
    p = forward_kinematics(plan, np.array([0.25]))
    np.testing.assert_allclose(p, [[0, 0, 0], [1, 0.25, 0]], atol=1e-15)


def test_root_pose_applies_before_root_offset():
    plan = chain_plan(fixed_base=False)
    quat = np.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])  # 90 deg about z
    p = forward_kinematics(plan, np.zeros(2), root_position=[5, 0, 0], root_orientation=quat)
    np.testing.assert_allclose(p, [[5, 0, 0], [5, 1, 0], [5, 2, 0], [5, 3, 0]], atol=1e-12)


@pytest.mark.parametrize(("dtype", "tol"), [(np.float64, 1e-9), (np.float32, 1e-4)])
def test_fly_synthetic_frames_reproduce_their_targets(fly, fixtures, dtype, tol):
    frames = fixtures["synthetic_frames"]
    q = np.stack([np.concatenate(f["ground_truth_dof_angles_per_leg"]) for f in frames])
    targets = np.array([f["target_ego"] for f in frames])
    p = forward_kinematics(fly, q.astype(dtype))
    assert p.dtype == dtype
    assert np.abs(p[:, 1:] - targets).max() < tol  # mm


def test_batched_over_any_leading_axes(rng):
    plan = random_plan(rng, n_joints=6)
    q, root_pos, quat = random_pose(plan, rng, n=6)
    flat = forward_kinematics(plan, q, root_pos, quat)
    nested = forward_kinematics(
        plan, q.reshape(2, 3, -1), root_pos.reshape(2, 3, 3), quat.reshape(2, 3, 4)
    )
    np.testing.assert_allclose(nested.reshape(flat.shape), flat, atol=1e-12)


def test_float32_matches_float64(rng):
    plan = random_plan(rng, n_joints=8, kinds=True)
    q, root_pos, quat = random_pose(plan, rng, n=5)
    p64 = forward_kinematics(plan, q, root_pos, quat)
    p32 = forward_kinematics(plan, q.astype(np.float32), root_pos, quat)
    assert p32.dtype == np.float32
    np.testing.assert_allclose(p32, p64, atol=2e-5)


def test_world_rotations_are_orthonormal(rng):
    plan = random_plan(rng, n_joints=8, kinds=True)
    q, root_pos, quat = random_pose(plan, rng)
    _, rot = forward_kinematics(plan, q, root_pos, quat, return_rotations=True)
    eye = np.broadcast_to(np.eye(3), rot.shape)
    np.testing.assert_allclose(rot @ np.swapaxes(rot, -1, -2), eye, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(rot), 1.0, atol=1e-12)


def test_local_rotations_compose_to_world_rotations(rng):
    """World frame = parent world frame @ offset rotation @ local joint rotation."""
    plan = random_plan(rng, n_joints=8, kinds=True)
    q, root_pos, quat = random_pose(plan, rng, n=3)
    _, world = forward_kinematics(plan, q, root_pos, quat, return_rotations=True)
    local = quat_to_matrix(joint_rotations_local(plan, q))
    offsets = quat_to_matrix(np.array([j.offset_quat for j in plan.joints]))
    parents = plan.parent_indices
    for j in range(plan.n_joints):
        parent = quat_to_matrix(quat) if parents[j] < 0 else world[:, parents[j]]
        np.testing.assert_allclose(world[:, j], parent @ offsets[j] @ local[:, j], atol=1e-12)


def test_wrong_dof_count_is_an_error(fly):
    with pytest.raises(ValueError, match="has 41 values.*42 DOFs"):
        forward_kinematics(fly, np.zeros(41))
