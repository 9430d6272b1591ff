"""Named anatomical angles: the plan field, the Euler decomposition, unwrapping, conventions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pipeline.bodyplan import BodyPlanError, load_body_plan, mannequin, save_body_plan
from pipeline.bodyplan.angles import SEQUENCES, angle_entries, angle_values, joint_angles
from pipeline.export.common import fit_plan
from pipeline.kinematics import forward_kinematics, joint_rotations_local


def _spin_plan(angles: dict | None = None) -> dict:
    """root (fixed) -> spin [unbounded hinge z] -> arm -> tip (a 3-joint chain)."""
    spin = {
        "name": "spin",
        "parent": "root",
        "offset_pos": [0, 0, 0],
        "offset_quat": [1, 0, 0, 0],
        "kind": "hinge",
        "axis": [0, 0, 1],
    }
    ball = {
        "name": "ball",
        "parent": "spin",
        "offset_pos": [1, 0, 0],
        "offset_quat": [0.9238795325112867, 0.0, 0.3826834323650898, 0.0],
        "kind": "ball",
        "axis": [0, 0, 1],
    }
    if angles is not None:
        ball["angles"] = angles
    joints = [
        {"name": "root", "parent": None, "offset_pos": [0, 0, 0], "offset_quat": [1, 0, 0, 0]}
        | {"kind": "fixed"},
        spin,
        ball,
        {"name": "tip", "parent": "ball", "offset_pos": [1, 0.2, 0], "offset_quat": [1, 0, 0, 0]}
        | {"kind": "fixed"},
    ]
    return {"version": 2, "fixed_base": True, "joints": joints}


def test_hinge_flexion_is_the_dof_value(walk):
    plan = fit_plan(walk)
    table = joint_angles(walk, plan, unit="rad")
    for side in "lr":
        np.testing.assert_array_equal(
            table.sel(angle=f"knee_{side}/flexion").values,
            walk["dof_value"].sel(dof=f"knee_{side}/0").values,
        )
    degrees = joint_angles(walk, plan)
    assert degrees.attrs["units"] == "deg"
    np.testing.assert_allclose(degrees.values, np.degrees(table.values), rtol=1e-12)


def _recompose(plan, table, dof_values):
    """Max quaternion distance between each Euler joint's angles and its rotation."""
    quats = joint_rotations_local(plan, dof_values)
    worst = 0.0
    for joint in plan.joints:
        spec = joint.angles
        if spec is None or spec.sequence is None:
            continue
        names = [f"{joint.name}/{n}" for n in spec.names]
        values = table.sel(angle=names).values * np.array(spec.signs)
        flat = values.reshape(-1, 3)
        q = Rotation.from_euler(spec.sequence.upper(), flat).as_quat(scalar_first=True)
        want = quats[..., plan.joint_index(joint.name), :].reshape(-1, 4)
        gap = np.minimum(np.abs(q - want).max(axis=1), np.abs(q + want).max(axis=1))
        worst = max(worst, float(gap.max()))
    return worst


def test_ball_and_universal_euler_angles_recompose_to_the_joint_rotation(walk):
    plan = fit_plan(walk)
    table = joint_angles(walk, plan, unit="rad").transpose("time", "individual", "angle")
    q = walk["dof_value"].transpose("time", "individual", "dof").values
    assert _recompose(plan, table, q) < 1e-9
    # the store's float32 joint_rotation is the same rotation
    stored = walk["joint_rotation"].transpose("time", "individual", "joint", "quat").values
    mine = joint_rotations_local(plan, q)
    dots = np.abs(np.sum(stored.astype(float) * mine, axis=-1))
    assert np.max(1 - dots) < 1e-6
    kinds = {j.kind.kind for j in plan.joints if j.angles and j.angles.sequence and j.kind}
    assert kinds == {"ball", "universal"}


def test_random_rotations_of_every_sequence_recompose(rng):
    spec = _spin_plan({"sequence": "zxy", "names": ["a", "b", "c"]})
    q = rng.uniform(-1.5, 1.5, size=(200, 4))
    for sequence in SEQUENCES:
        spec["joints"][2]["angles"] = {"sequence": sequence, "names": ["a", "b", "c"]}
        plan = load_body_plan(spec)
        values = angle_values(plan, q)
        e = [i for i, entry in enumerate(angle_entries(plan)) if entry.source == "euler"]
        got = Rotation.from_euler(sequence.upper(), values[:, e]).as_matrix()
        want = Rotation.from_quat(
            joint_rotations_local(plan, q)[:, 2], scalar_first=True
        ).as_matrix()
        assert np.abs(got - want).max() < 1e-9, sequence


def test_ten_turns_of_an_unbounded_hinge_unwrap_continuously():
    plan = load_body_plan(_spin_plan({"sequence": "zyx", "names": ["yaw", "pitch", "roll"]}))
    turns = np.linspace(0, 20 * np.pi, 4001)
    q = np.zeros((turns.size, plan.n_dofs))
    q[:, 0] = turns  # the hinge: reported as its coordinate
    q[:, 3] = turns  # the ball's twist about z: an Euler angle, unwrapped
    names = [e.name for e in angle_entries(plan)]
    values = angle_values(plan, q)
    hinge, yaw = values[:, names.index("spin/0")], values[:, names.index("ball/yaw")]
    np.testing.assert_array_equal(hinge, turns)
    np.testing.assert_allclose(yaw, turns, atol=1e-9)
    assert np.abs(np.diff(yaw)).max() < 0.02
    # NaN frames (unfitted) stay NaN and do not break the unwrap
    q[100:120] = np.nan
    gapped = angle_values(plan, q)[:, names.index("ball/yaw")]
    assert np.isnan(gapped[100:120]).all()
    np.testing.assert_allclose(gapped[120:], turns[120:], atol=1e-9)


def test_mannequin_angles_read_positive_in_the_isb_directions():
    plan = mannequin()
    names = [e.name for e in angle_entries(plan)]
    rest = forward_kinematics(plan, np.zeros(plan.n_dofs))

    def moved(joint: str, dof: str, keypoint: str, value: float = 0.2):
        q = np.zeros(plan.n_dofs)
        q[plan.dof_names.index(f"{joint}/{dof}")] = value
        delta = forward_kinematics(plan, q)[plan.joint_index(keypoint)]
        delta = delta - rest[plan.joint_index(keypoint)]
        return delta, dict(zip(names, angle_values(plan, q[None])[0], strict=True))

    for side, medial in (("l", -1.0), ("r", 1.0)):
        # hip: the knee forward (+z) is flexion, toward the midline adduction
        for dof in ("swing_y", "swing_z"):
            delta, angle = moved(f"hip_{side}", dof, f"knee_{side}")
            if abs(delta[2]) > 1e-3:
                assert np.sign(angle[f"hip_{side}/flexion"]) == np.sign(delta[2])
            if abs(delta[0]) > 1e-3:
                assert np.sign(angle[f"hip_{side}/adduction"]) == np.sign(delta[0] * medial)
        # hip twist turning the toes toward the midline is internal rotation
        delta, angle = moved(f"hip_{side}", "twist", f"toe_{side}")
        assert np.sign(angle[f"hip_{side}/internal_rotation"]) == np.sign(delta[0] * medial)
        # ankle: the toe up is dorsiflexion
        delta, angle = moved(f"ankle_{side}", "0", f"toe_{side}")
        assert np.sign(angle[f"ankle_{side}/dorsiflexion"]) == np.sign(delta[1])
    assert {"knee_l/flexion", "elbow_r/flexion", "wrist_l/radial_deviation"} <= set(names)


def test_fly_angles_are_named_after_its_dofs(fly_plan_path):
    plan = load_body_plan(fly_plan_path)
    names = [e.name for e in angle_entries(plan)]
    assert len(names) == plan.n_dofs == 42
    assert names[0] == "lf_thorax_coxa/c_thorax-lf_coxa-yaw"


def test_angles_survive_save_and_load(tmp_path):
    plan = mannequin()
    again = load_body_plan(save_body_plan(plan, tmp_path / "m.json"))
    assert again == plan
    data = json.loads((tmp_path / "m.json").read_text())
    hip = next(j for j in data["joints"] if j["name"] == "hip_r")
    assert hip["angles"] == {
        "sequence": "xzy",
        "names": ["flexion", "adduction", "internal_rotation"],
        "signs": [-1, 1, 1],
    }


@pytest.mark.parametrize(
    ("angles", "match"),
    [
        ({"sequence": "xqz", "names": ["a", "b", "c"]}, r"unknown angle sequence 'xqz'; valid"),
        ({"sequence": "xxy", "names": ["a", "b", "c"]}, r"joint 'ball'.*unknown angle sequence"),
        ({"sequence": "xyz", "names": ["a", "b"]}, r"angles.names.*needs 3 name"),
        ({"names": ["a", "b"]}, r"needs 3 name\(s\), one per rotational coordinate"),
        ({"sequence": "xyz", "names": ["a", "a", "b"]}, r"repeated name"),
        ({"sequence": "xyz", "names": ["a/b", "c", "d"]}, r"cannot contain '/'"),
        ({"sequence": "xyz", "names": ["a", "b", "c"], "signs": [1, 2, 1]}, r"each 1 or -1"),
        ({"sequence": "xyz", "names": ["a", "b", "c"], "order": "x"}, r"unknown key"),
        ({"sequence": "xyz"}, r"angles.names.*missing required field"),
    ],
)
def test_bad_angles_are_refused(angles, match):
    with pytest.raises(BodyPlanError, match=match):
        load_body_plan(_spin_plan(angles))


def test_angles_in_a_version_1_file_are_refused(fly_plan_path):
    data = json.loads(fly_plan_path.read_text())
    data["joints"][3]["angles"] = {"names": ["flexion"]}
    with pytest.raises(BodyPlanError, match=r"'angles'.*version-2 field"):
        load_body_plan(data)


def test_a_plan_of_other_dofs_is_refused(walk, fly_plan_path):
    with pytest.raises(BodyPlanError, match=r"the plan's DOFs \(42\) are not the fit's \(32\)"):
        joint_angles(walk, load_body_plan(fly_plan_path))
