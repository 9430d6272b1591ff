"""Body plans of Kimodo skeletons: structure, and FK equal to Kimodo's documented convention."""

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pipeline.export.kimodo import KimodoError, kimodo_body_plan, load_kimodo_skeleton
from pipeline.export.kimodo.fk import ball_dofs, heading_angle, kimodo_fk, rot_y, up_axis_matrix
from pipeline.kinematics import forward_kinematics, joint_rotations_local
from pipeline.kinematics.rotations import quat_to_matrix
from tests.fixtures.shared_data import KIMODO

SKELETONS = KIMODO / "skeletons.json"
NAMES = ("somaskel30", "somaskel77", "g1skel34", "smplx22")


def reference_fk(definition: dict, rotvec: np.ndarray, root: np.ndarray) -> np.ndarray:
    """Kimodo format, part 3, written out: G_j = G_p R_j, p_j = p_p + G_p (rest_j - rest_p)."""
    parents = definition["parent_indices"]
    rest = np.asarray(definition["rest_positions_m_root_relative"])
    out = np.zeros((rotvec.shape[0], len(parents), 3))
    for t in range(rotvec.shape[0]):
        local = Rotation.from_rotvec(rotvec[t]).as_matrix()
        glob = [None] * len(parents)
        for j, p in enumerate(parents):
            if p < 0:
                glob[j], out[t, j] = local[j], root[t]
            else:
                glob[j] = glob[p] @ local[j]
                out[t, j] = out[t, p] + glob[p] @ (rest[j] - rest[p])
    return out


@pytest.fixture(scope="module")
def definitions():
    return json.loads(SKELETONS.read_text())


@pytest.mark.parametrize("name", NAMES)
def test_body_plan_has_kimodo_names_order_offsets_and_kinds(name, definitions):
    sk = load_kimodo_skeleton(SKELETONS, name)
    plan = kimodo_body_plan(sk)
    d = definitions[name]
    assert plan.joint_names == tuple(d["joint_names"]) and plan.version == 2
    assert not plan.fixed_base and plan.name == name
    np.testing.assert_array_equal(plan.parent_indices, d["parent_indices"])
    offsets = np.array([j.offset_pos for j in plan.joints])
    # the file rounds rest positions and offsets to 1e-6 m separately
    np.testing.assert_allclose(offsets, d["rest_offsets_from_parent_m"], rtol=0, atol=2.1e-6)
    assert all(j.offset_quat == (1.0, 0.0, 0.0, 0.0) for j in plan.joints)
    for j, joint in enumerate(plan.joints):
        has_children = j in d["parent_indices"]
        expected = "ball" if j > 0 and has_children else "fixed"
        assert joint.kind.kind == expected, joint.name
        if expected == "ball":
            assert joint.kind.swing_limit is None and joint.kind.twist_limit is None


@pytest.mark.parametrize("name", NAMES)
def test_identity_rotations_give_the_rest_positions(name, definitions):
    sk = load_kimodo_skeleton(SKELETONS, name)
    plan = kimodo_body_plan(sk)
    rest = np.asarray(definitions[name]["rest_positions_m_root_relative"])
    root = np.array([0.3, 0.9, -1.2])
    np.testing.assert_allclose(forward_kinematics(plan, np.zeros(plan.n_dofs), root), rest + root)
    identity = np.broadcast_to(np.eye(3), (1, sk.n_joints, 3, 3))
    np.testing.assert_allclose(kimodo_fk(sk, identity, root[None])[0][0], rest + root, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_random_local_rotations_match_the_documented_formulas(name, definitions, rng):
    sk = load_kimodo_skeleton(SKELETONS, name)
    plan = kimodo_body_plan(sk)
    rotvec = rng.normal(scale=1.0, size=(6, sk.n_joints, 3))
    root = rng.normal(size=(6, 3))
    expected = reference_fk(definitions[name], rotvec, root)
    local = Rotation.from_rotvec(rotvec.reshape(-1, 3)).as_quat(scalar_first=True)
    local = local.reshape(6, sk.n_joints, 4)
    dofs = ball_dofs(plan, local)  # leaf rotations move nothing; the root's is the root pose
    got = forward_kinematics(plan, dofs, root, local[:, 0])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_allclose(kimodo_fk(sk, quat_to_matrix(local), root)[0], expected, atol=1e-12)
    movable = [j for j, joint in enumerate(plan.joints) if joint.dofs]
    back = quat_to_matrix(joint_rotations_local(plan, dofs))[:, movable]
    np.testing.assert_allclose(back, quat_to_matrix(local)[:, movable], atol=1e-12)


def test_heading_formula_turns_with_the_body():
    sk = load_kimodo_skeleton(SKELETONS, "somaskel30")
    rest = sk.rest_positions
    d = rest[sk.index("RightLeg")] - rest[sk.index("LeftLeg")]
    at_rest = np.arctan2(d[2], -d[0])  # SOMA's hips are not quite symmetric: 1.2 mrad
    assert heading_angle(sk, rest) == pytest.approx(at_rest) and abs(at_rest) < 2e-3
    for theta in (0.0, 0.4, -2.5, 3.0):
        local = np.broadcast_to(np.eye(3), (sk.n_joints, 3, 3)).copy()
        local[0] = rot_y(theta)
        positions, _ = kimodo_fk(sk, local, np.zeros(3))
        turned = np.angle(np.exp(1j * (heading_angle(sk, positions) - at_rest)))
        assert turned == pytest.approx(theta, abs=1e-12)


@pytest.mark.parametrize("up", ["x", "y", "z", "-x", "-y", "-z"])
def test_up_axis_matrices_are_proper_rotations_taking_up_to_plus_y(up):
    c = up_axis_matrix(up)
    vector = {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}[up[-1]]
    vector = -np.asarray(vector) if up.startswith("-") else np.asarray(vector)
    np.testing.assert_allclose(c @ vector, [0, 1, 0])
    assert np.linalg.det(c) == pytest.approx(1.0)
    # MuJoCo/robot (Z up, +X forward): kimodo = (m_y, m_z, m_x) as Kimodo's format gives it
    if up == "z":
        np.testing.assert_array_equal(c @ np.array([1.0, 2.0, 3.0]), [2.0, 3.0, 1.0])


def test_skeleton_file_errors_name_the_file_and_valid_choices(tmp_path):
    with pytest.raises(KimodoError, match=r"unknown skeleton 'soma'; skeletons in the file: .*g1"):
        load_kimodo_skeleton(SKELETONS, "soma")
    with pytest.raises(KimodoError, match=r"nope\.json: skeleton file not found"):
        load_kimodo_skeleton(tmp_path / "nope.json", "somaskel30")
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"s": {"joint_names": ["a"], "parent_indices": [-1], "hip_pair_right_left": []}}'
    )
    with pytest.raises(
        KimodoError, match=r"bad\.json: skeleton 's': rest_positions_m_root_relative: missing"
    ):
        load_kimodo_skeleton(bad, "s")
