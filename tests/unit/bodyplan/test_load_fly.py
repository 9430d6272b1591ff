"""Loading QuickIK's NeuroMechFly body plan (the real format file)."""

from __future__ import annotations

import json
import warnings

import numpy as np

from pipeline.bodyplan import BodyPlan, load_body_plan


def test_fly_loads_with_expected_structure(fly_plan_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = load_body_plan(fly_plan_path)
    raw = json.loads(fly_plan_path.read_text())
    assert isinstance(plan, BodyPlan)
    assert plan.n_joints == 31
    assert plan.n_dofs == 42
    assert plan.fixed_base is False
    assert plan.version == 1
    assert plan.name == "neuromechfly_ypr_legs"
    assert plan.source == str(fly_plan_path)
    assert plan.joint_names == tuple(j["name"] for j in raw["joints"])
    assert plan.dof_names == tuple(d["name"] for j in raw["joints"] for d in j["dofs"])
    names = [j["name"] for j in raw["joints"]]
    expected_parents = [
        -1 if j["parent"] is None else names.index(j["parent"]) for j in raw["joints"]
    ]
    np.testing.assert_array_equal(plan.parent_indices, expected_parents)
    np.testing.assert_array_equal(
        plan.neutral, [d["neutral"] for j in raw["joints"] for d in j["dofs"]]
    )
    assert np.all(np.isinf(plan.lower)) and np.all(np.isinf(plan.upper))
    np.testing.assert_array_equal(plan.dof_weight_scalers, np.ones(42))
    np.testing.assert_array_equal(plan.joint_weight_scalers, np.ones(31))
    assert all(d.type == "hinge" for j in plan.joints for d in j.dofs)
    assert all(j.kind is None for j in plan.joints)
    # leg order lf, lm, lh, rf, rm, rh; each leg 7 DOFs
    assert plan.dof_names[0] == "c_thorax-lf_coxa-yaw"
    assert plan.dof_joint[7] == names.index("lm_thorax_coxa")
