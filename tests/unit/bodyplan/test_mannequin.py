"""The mannequin prefab: saved form, conventions, limits and observability at rest."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlan, load_body_plan, mannequin
from pipeline.bodyplan.mannequin import mannequin_dict
from pipeline.bodyplan.mannequin.__main__ import main
from tests.fixtures.bodyplan_samples import MANNEQUIN_JSON

STANDING_PELVIS_HEIGHT = 0.96  # m, documented in the module docstring


@pytest.fixture(scope="module")
def plan() -> BodyPlan:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every DOF has a keypoint below it
        return mannequin()


@pytest.fixture(scope="module")
def rest(plan) -> dict[str, np.ndarray]:
    """World keypoints at rest (every offset_quat is identity): summed offsets."""
    assert all(j.offset_quat == (1.0, 0.0, 0.0, 0.0) for j in plan.joints)
    pos: dict[str, np.ndarray] = {}
    for j in plan.joints:
        base = np.zeros(3) if j.parent is None else pos[j.parent]
        pos[j.name] = base + np.asarray(j.offset_pos)
    return pos


def test_saved_json_is_the_prefab(plan):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_body_plan(MANNEQUIN_JSON) == plan


def test_command_line_regenerates_the_saved_json(tmp_path, capsys):
    out = tmp_path / "mannequin.json"
    main(["--write", str(out)])
    assert "wrote" in capsys.readouterr().out
    assert out.read_text() == MANNEQUIN_JSON.read_text()


def test_structure(plan):
    assert plan.version == 2 and plan.fixed_base is False and plan.name == "mannequin"
    assert plan.joints[0].name == "pelvis" and plan.joints[0].dofs == ()
    kinds = {j.name: j.kind.kind for j in plan.joints}
    for side in "lr":
        assert kinds[f"shoulder_{side}"] == kinds[f"hip_{side}"] == "ball"
        assert kinds[f"elbow_{side}"] == kinds[f"knee_{side}"] == "hinge"
        assert kinds[f"wrist_{side}"] == kinds[f"ankle_{side}"] == "universal"
        assert kinds[f"clavicle_{side}"] == "fixed"
        for tip in ("hand", "toe"):
            assert kinds[f"{tip}_{side}"] == "fixed"
        assert kinds[f"thumb_{side}"] == kinds[f"heel_{side}"] == "fixed"
    assert kinds["spine"] == "universal"  # lumbar: no twist of its own (see the docstring)
    assert kinds["chest"] == kinds["neck"] == "ball"
    assert kinds["head"] == kinds["head_top"] == kinds["nose"] == "fixed"
    assert plan.n_joints == 29 and plan.n_dofs == 32
    assert mannequin_dict()["version"] == 2


def test_conventions_metres_y_up_facing_z_left_is_x(plan, rest):
    floor = STANDING_PELVIS_HEIGHT
    assert rest["head_top"][1] + floor == pytest.approx(1.75)
    lowest = min(p[1] for p in rest.values()) + floor
    assert 0.0 <= lowest < 0.05  # feet just above the floor y = 0
    assert rest["nose"][2] > rest["head"][2]  # faces +Z
    assert rest["toe_l"][2] > rest["ankle_l"][2] > rest["heel_l"][2]
    for name in ("shoulder", "elbow", "wrist", "hand", "hip", "knee", "ankle"):
        assert rest[f"{name}_l"][0] > 0 > rest[f"{name}_r"][0]  # left is +X
        np.testing.assert_allclose(rest[f"{name}_r"], rest[f"{name}_l"] * [-1, 1, 1])
    # A-pose: upper arm 45 deg below horizontal
    upper = rest["elbow_l"] - rest["shoulder_l"]
    assert math.degrees(math.atan2(-upper[1], upper[0])) == pytest.approx(45)
    # adult proportions: arm span a little under the height, legs about half of it
    span = rest["hand_l"][0] - rest["hand_r"][0]
    assert 1.2 < span < 1.75
    assert 0.8 < rest["hip_l"][1] - lowest + floor < 1.0


def test_limits_are_anatomical(plan):
    deg = math.radians
    j = {x.name: x for x in plan.joints}
    for side in "lr":
        assert j[f"knee_{side}"].kind.limits == (0.0, deg(150))  # flexes one way only
        assert j[f"elbow_{side}"].kind.limits == (0.0, deg(150))
        assert j[f"shoulder_{side}"].kind.swing_limit == (deg(90), deg(90))
        hip = j[f"hip_{side}"].kind
        assert deg(30) < min(hip.swing_limit) and max(hip.swing_limit) <= deg(120)
    for name in ("chest", "neck"):
        assert max(j[name].kind.swing_limit) < deg(60)
    assert all(lo >= -deg(45) and hi <= deg(45) for lo, hi in j["spine"].kind.limits)
    # neutral (zeros) is inside every limit: a natural standing pose
    np.testing.assert_array_equal(plan.neutral, 0.0)
    assert np.all(plan.lower <= 0) and np.all(plan.upper >= 0)


def test_knee_flexion_moves_the_foot_backward(plan, rest):
    axis = np.asarray(plan.joints[plan.joint_index("knee_l")].dofs[0].axis)
    ankle = rest["ankle_l"] - rest["knee_l"]
    velocity = np.cross(axis, ankle)  # positive flexion
    assert velocity[2] < 0 and abs(velocity[1]) < 1e-12


def test_elbow_flexion_brings_the_hand_forward(plan, rest):
    for side in "lr":
        axis = np.asarray(plan.joints[plan.joint_index(f"elbow_{side}")].dofs[0].axis)
        velocity = np.cross(axis, rest[f"hand_{side}"] - rest[f"elbow_{side}"])
        assert velocity[2] > 0.3


def _rest_jacobian(plan, rest) -> np.ndarray:
    """(3 * n_joints, n_dofs) keypoint Jacobian at the rest pose (frames world-aligned)."""
    n = plan.n_joints
    descendants = {i: set() for i in range(n)}
    for i in range(n - 1, 0, -1):
        parent = plan.parent_indices[i]
        descendants[parent] |= {i} | descendants[i]
    names = plan.joint_names
    cols = []
    for ji, joint in enumerate(plan.joints):
        for dof in joint.dofs:
            col = np.zeros((n, 3))
            for k in descendants[ji]:
                arm = rest[names[k]] - rest[joint.name]
                col[k] = dof.axis if dof.type == "slide" else np.cross(dof.axis, arm)
            cols.append(col.ravel())
    return np.stack(cols, axis=1)


def test_every_dof_is_observable_at_the_neutral_pose(plan, rest):
    jac = _rest_jacobian(plan, rest)
    assert jac.shape == (3 * 29, 32)
    singular = np.linalg.svd(jac, compute_uv=False)
    assert singular.min() > 0.02  # full rank, and not barely (m per rad)
    # each ball joint's twist is seen by a keypoint off its axis
    for joint in plan.joints:
        if joint.kind.kind == "ball":
            col = jac[:, plan.dof_names.index(f"{joint.name}/twist")]
            assert np.abs(col).max() > 0.01, joint.name


def test_root_free_pose_plus_dofs_is_well_posed(plan, rest):
    """With the 6 root DOFs added the rest Jacobian stays full rank (38)."""
    pts = np.stack([rest[n] for n in plan.joint_names])
    root_t = np.tile(np.eye(3), (plan.n_joints, 1))
    root_r = np.concatenate([-np.cross(np.eye(3), p).T for p in pts])  # d(w x p)/dw
    full = np.concatenate([root_t, root_r, _rest_jacobian(plan, rest)], axis=1)
    assert np.linalg.matrix_rank(full, tol=1e-6) == 38
