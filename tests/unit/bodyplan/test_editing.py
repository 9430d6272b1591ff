"""Body-plan editing keeps world rest poses; combined plans fit several individuals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError, load_body_plan, mannequin
from pipeline.bodyplan.editing import combine, place, remove_joint, rename
from pipeline.bodyplan.io import body_plan_to_dict
from pipeline.bodyplan.rerooting import reroot
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.rotations import quat_normalize
from pipeline.solve import SolverConfig, solve_sequence
from tests.fixtures.shared_data import QUICKIK, SHARED

G1_MJCF = SHARED / "data" / "models" / "mjcf" / "unitree_g1.nomesh.xml"


def _rest(plan):
    return forward_kinematics(plan, np.zeros(plan.n_dofs), return_rotations=True)


def _plans():
    yield "mannequin", mannequin()
    yield "fly", load_body_plan(QUICKIK / "neuromechfly_ypr_legs.json")
    pytest.importorskip("mujoco", reason="needs mujoco: pip install 'kinefit[mjcf]'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield "g1", load_body_plan(G1_MJCF, sites=True)


def test_remove_joint_keeps_every_world_rest_pose():
    for label, plan in _plans():
        pos, rot = _rest(plan)
        for name in plan.joint_names:
            if plan.joints[0].name == name and sum(j.parent == name for j in plan.joints) != 1:
                with pytest.raises(BodyPlanError, match="cannot remove the root"):
                    remove_joint(plan, name)
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                edited = remove_joint(plan, name)
            assert name not in edited.joint_names
            p2, r2 = _rest(edited)
            idx = [plan.joint_index(n) for n in edited.joint_names]
            np.testing.assert_allclose(p2, pos[idx], atol=1e-12, err_msg=f"{label}: {name}")
            np.testing.assert_allclose(r2, rot[idx], atol=1e-12, err_msg=f"{label}: {name}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert edited == load_body_plan(body_plan_to_dict(edited))  # still valid


def test_remove_joint_drops_its_dofs_and_lowers_the_version():
    plan = load_body_plan(QUICKIK / "neuromechfly_ypr_legs.json")
    edited = remove_joint(plan, "lf_coxa_trochanterfemur")
    assert edited.n_dofs == plan.n_dofs - 2
    man = mannequin()
    flat = man
    warnings.simplefilter("ignore")
    for joint in man.joints[1:]:
        if joint.kind is not None and joint.kind.kind != "fixed":
            flat = remove_joint(flat, joint.name)
    assert flat.version == 1 and flat.n_dofs == 0
    with pytest.raises(BodyPlanError, match="no joint named 'tail'"):
        remove_joint(plan, "tail")


def test_rename_place_and_reroot():
    man = mannequin()
    renamed = rename(man, {"shoulder_l": "left_shoulder"})
    assert "left_shoulder/twist" in renamed.dof_names  # a ball's coordinates follow
    np.testing.assert_allclose(_rest(renamed)[0], _rest(man)[0], atol=0)
    placed = place(man, "a/")
    assert placed.joint_names[0] == "a/pelvis" and all(n.startswith("a/") for n in placed.dof_names)
    with pytest.raises(BodyPlanError, match="duplicate joint names"):
        rename(man, {"knee_l": "knee_r"})
    fly = load_body_plan(QUICKIK / "neuromechfly_ypr_legs.json")
    with pytest.raises(BodyPlanError, match="on the path to the root have DOFs"):
        reroot(fly, "lf_claw")
    chain = load_body_plan(
        {
            "fixed_base": True,
            "joints": [
                {
                    "name": "a",
                    "parent": None,
                    "offset_pos": [1, 0, 0],
                    "offset_quat": [0.8, 0.6, 0, 0],
                    "dofs": [],
                },
                {
                    "name": "b",
                    "parent": "a",
                    "offset_pos": [0, 1, 0],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [],
                },
                {
                    "name": "c",
                    "parent": "b",
                    "offset_pos": [0, 0, 1],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [{"type": "hinge", "axis": [1, 0, 0], "neutral": 0}],
                },
                {
                    "name": "d",
                    "parent": "c",
                    "offset_pos": [0, 0, 1],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [],
                },
                {
                    "name": "e",
                    "parent": "a",
                    "offset_pos": [0, 0, 2],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [],
                },
            ],
        }
    )
    moved = reroot(chain, "b")
    assert moved.joint_names[0] == "b" and moved.joints[moved.joint_index("a")].parent == "b"
    q = np.array([0.7])
    a, b = forward_kinematics(chain, q), forward_kinematics(moved, q)
    np.testing.assert_allclose(b, a[[chain.joint_index(n) for n in moved.joint_names]], atol=1e-12)


def _motion(plan, rng, t, offset):
    """Smooth in-range DOFs and root poses for ``t`` frames (one individual)."""
    phase = np.linspace(0, 1, t)[:, None]
    amp = rng.uniform(-0.25, 0.25, plan.n_dofs)
    q = np.clip(
        plan.neutral + amp * np.sin(2 * np.pi * phase + rng.uniform(0, 6, plan.n_dofs)),
        plan.lower,
        plan.upper,
    )
    pos = offset + 0.3 * np.sin(2 * np.pi * phase + rng.uniform(0, 6, 3))
    axis = quat_normalize(
        np.concatenate([np.ones((t, 1)), 0.3 * np.sin(3 * phase + rng.uniform(0, 6, 3))], 1)
    )
    return q, pos, axis


def test_combine_two_mannequins_fits_two_individuals(rng):
    man = mannequin()
    both = combine([man, man], ["a_", "b_"])
    assert both.fixed_base and both.joints[0].name == "world"
    assert both.n_dofs == 2 * (man.n_dofs + 6)
    t = 20
    targets = np.full((t, both.n_joints, 3), np.nan)
    for prefix, offset in (("a_", np.array([-1.0, 0.96, 0.0])), ("b_", np.array([1.0, 0.96, 0.5]))):
        q, pos, quat = _motion(man, rng, t, offset)
        kp = forward_kinematics(man, q, pos, quat)
        for k, name in enumerate(man.joint_names):
            targets[:, both.joint_index(prefix + name)] = kp[:, k]
    cfg = SolverConfig(
        mode="lm",
        n_iterations=60,
        neutral_weight=0.0,
        position_tolerance=1e-9,
        angle_tolerance=1e-9,
    )
    fit = solve_sequence(both, targets, config=cfg)
    assert float(np.nanmax(fit.rms_error)) < 1e-6  # metres: both individuals recovered
    observed = ~np.isnan(targets[..., 0])
    np.testing.assert_allclose(fit.fitted_position[observed], targets[observed], atol=1e-5)
