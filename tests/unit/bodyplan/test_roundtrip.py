"""Normalization, x- keys, warnings, save/load round trips, versions and fingerprints."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import warnings

import numpy as np
import pytest

from pipeline.bodyplan import (
    BodyPlanError,
    UnobservableDofWarning,
    body_plan_sha256,
    body_plan_to_dict,
    load_body_plan,
    mannequin,
    save_body_plan,
)
from tests.fixtures.bodyplan_samples import small_v1, small_v2


def _load_quiet(source):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_body_plan(source)


def test_axes_and_quaternions_are_normalized():
    data = small_v1()
    data["joints"][1]["dofs"][0]["axis"] = [0, 0, 3]
    data["joints"][2]["dofs"][0]["axis"] = [1, 1, 0]
    data["joints"][2]["offset_quat"] = [2, 0, 0, 2]
    plan = _load_quiet(data)
    assert plan.joints[1].dofs[0].axis == (0.0, 0.0, 1.0)
    np.testing.assert_allclose(plan.joints[2].dofs[0].axis, [math.sqrt(0.5), math.sqrt(0.5), 0])
    np.testing.assert_allclose(plan.joints[2].offset_quat, [math.sqrt(0.5), 0, 0, math.sqrt(0.5)])
    assert math.isclose(np.linalg.norm(plan.joints[2].offset_quat), 1.0, rel_tol=1e-15)


def test_normalization_is_idempotent_through_save(tmp_path):
    data = small_v2()
    data["joints"][2]["axis"] = [1, 2, 3]
    data["joints"][4]["axes"] = [[1, 1, 1], [0.3, -0.2, 0.9]]
    data["joints"][3]["offset_quat"] = [0.3, 0.1, -0.7, 0.2]
    plan = _load_quiet(data)
    again = _load_quiet(save_body_plan(plan, tmp_path / "p.json"))
    assert again == plan
    primary, secondary = plan.joints[4].kind.axes
    assert abs(np.dot(primary, secondary)) < 1e-15
    assert math.isclose(np.linalg.norm(secondary), 1.0, rel_tol=1e-15)


def test_x_keys_are_ignored_at_every_level():
    plain = _load_quiet(small_v2())
    data = small_v2()
    data["x-comment"] = "top"
    data["x-name"] = "with comments"
    data["joints"][2]["x-note"] = {"anything": [1, 2]}
    data["joints"][5]["dofs"][0]["x-why"] = "dof level"
    data["joints"][0]["x-"] = None
    plan = _load_quiet(data)
    assert plan == plain
    assert plan.name == "with comments" and plain.name is None
    v1 = small_v1()
    v1["joints"][1]["dofs"][1]["x-source"] = "mujoco"
    assert _load_quiet(v1) == _load_quiet(small_v1())


def test_dof_without_keypoint_below_warns_but_loads():
    data = small_v1()
    data["joints"].pop()  # drop 'tip': 'lower' keeps its slide with nothing below it
    with pytest.warns(UnobservableDofWarning, match=r"<dict>: .*joint 'lower' \(lower/0\)"):
        plan = load_body_plan(data)
    assert plan.n_dofs == 3


def test_warning_lists_every_unobservable_joint():
    data = small_v1()
    data["joints"][3]["dofs"] = [{"type": "hinge", "axis": [0, 0, 1], "neutral": 0, "name": "t"}]
    data["joints"].append(
        {
            "name": "side",
            "parent": "upper",
            "offset_pos": [0, 1, 0],
            "offset_quat": [1, 0, 0, 0],
            "dofs": [data["joints"][3]["dofs"][0] | {"name": "s"}],
        }
    )
    with pytest.warns(UnobservableDofWarning) as record:
        load_body_plan(data, source="two.json")
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("two.json: ")
    assert "joint 'tip' (t)" in message and "joint 'side' (s)" in message


def test_fly_round_trip_is_exact_and_stays_quickik(fly_plan_path, tmp_path):
    plan = _load_quiet(fly_plan_path)
    out = save_body_plan(plan, tmp_path / "fly.json")
    assert _load_quiet(out) == plan
    saved = json.loads(out.read_text())
    assert "version" not in saved
    # QuickIK's own key names and values, unchanged
    assert saved == json.loads(fly_plan_path.read_text())


def test_small_v1_round_trip_keeps_weights_and_limits(tmp_path):
    data = small_v1()
    data["joints"][2]["weight_scaler"] = 0.25
    data["joints"][1]["dofs"][1]["weight_scaler"] = 3.0
    plan = _load_quiet(data)
    again = _load_quiet(save_body_plan(plan, tmp_path / "s.json"))
    assert again == plan
    np.testing.assert_array_equal(again.joint_weight_scalers, [1, 1, 0.25, 1])
    np.testing.assert_array_equal(again.dof_weight_scalers, [1, 3, 1])
    np.testing.assert_array_equal(again.lower, [-1, -np.inf, 0])
    np.testing.assert_array_equal(again.upper, [1, np.inf, 0.5])


def test_v1_dof_limits_may_be_omitted():
    data = small_v1()
    del data["joints"][1]["dofs"][1]["limits"]  # QuickIK defaults it to null
    assert _load_quiet(data) == _load_quiet(small_v1())


@pytest.mark.parametrize("make", [small_v2, lambda: body_plan_to_dict(mannequin())])
def test_v2_round_trip(make, tmp_path):
    plan = _load_quiet(make())
    assert plan.version == 2
    out = save_body_plan(plan, tmp_path / "v2.json")
    assert json.loads(out.read_text())["version"] == 2
    assert _load_quiet(out) == plan
    assert body_plan_to_dict(_load_quiet(out)) == body_plan_to_dict(plan)


def test_version_rules(tmp_path):
    v1 = _load_quiet(small_v1())
    assert v1.version == 1
    declared = small_v1()
    declared["version"] = 1
    assert _load_quiet(declared) == v1
    # a version-2 file that uses nothing new needs only version 1 and is saved as such
    plain_v2 = small_v1()
    plain_v2["version"] = 2
    plan = _load_quiet(plain_v2)
    assert plan.version == 1 and plan == v1
    assert "version" not in json.loads(save_body_plan(plan, tmp_path / "a.json").read_text())
    assert _load_quiet(small_v2()).version == 2


def test_v2_file_without_version_is_rejected_naming_joint_and_field():
    data = small_v2()
    del data["version"]
    with pytest.raises(BodyPlanError, match=r"joint 'base': field 'kind': is a version-2 field"):
        load_body_plan(data)


def test_saving_never_changes_the_version_a_file_needs(fly_plan_path, tmp_path):
    for source in (fly_plan_path, small_v1(), small_v2(), body_plan_to_dict(mannequin())):
        plan = _load_quiet(source)
        again = _load_quiet(save_body_plan(plan, tmp_path / "x.json"))
        assert again.version == plan.version


def test_save_replaces_atomically_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("old content")
    save_body_plan(_load_quiet(small_v1()), path)
    assert _load_quiet(path) == _load_quiet(small_v1())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_save_failure_keeps_the_old_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("old content")
    plan = _load_quiet(small_v1())
    broken = type(plan)(joints=plan.joints, fixed_base=plan.fixed_base, name=object())
    with pytest.raises(TypeError):
        save_body_plan(broken, path)
    assert path.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_sha256_fingerprint(fly_plan_path):
    a = _load_quiet(small_v2())
    digest = body_plan_sha256(a)
    assert len(digest) == 64 and int(digest, 16) >= 0
    renamed = small_v2()
    renamed["x-name"] = "another name"
    assert body_plan_sha256(load_body_plan(renamed, source="elsewhere.json")) == digest
    changed = small_v2()
    changed["joints"][3]["neutral"] = 0.6
    assert body_plan_sha256(_load_quiet(changed)) != digest
    assert body_plan_sha256(_load_quiet(fly_plan_path)) != digest
    # canonical JSON of body_plan_to_dict: stable across calls and key order
    reordered = dict(reversed(list(small_v2().items())))
    assert body_plan_sha256(_load_quiet(reordered)) == digest


def test_sha256_does_not_tell_integer_from_float_numbers(quickik_dir):
    """A plan built in code with ``0`` has the fingerprint of the same plan read from a file."""
    a = _load_quiet(small_v2())  # the loader makes every offset a float

    def integral(values):
        return tuple(int(x) if float(x).is_integer() else x for x in values)

    joints = [
        dataclasses.replace(
            j, offset_pos=integral(j.offset_pos), offset_quat=integral(j.offset_quat)
        )
        for j in a.joints
    ]
    b = dataclasses.replace(a, joints=tuple(joints))  # as code would build it: ints survive
    assert json.dumps(body_plan_to_dict(a)) != json.dumps(body_plan_to_dict(b))
    assert a == b and body_plan_sha256(a) == body_plan_sha256(b)
    # integers that are integers stay part of the fingerprint: a sign flip changes it
    plan = mannequin()
    data = body_plan_to_dict(plan)
    signed = next(j for j in data["joints"] if "angles" in j and "signs" in j["angles"])
    signed["angles"]["signs"][0] *= -1
    assert body_plan_sha256(load_body_plan(data)) != body_plan_sha256(plan)
    # plans without integers in real-valued fields keep the fingerprint of the old rule
    from pipeline.provenance.hashing import json_sha256

    g1 = quickik_dir.parent / "quickik-g1" / "g1_body_plan.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnobservableDofWarning)  # the G1's ankle rolls
        plans = [mannequin(), load_body_plan(quickik_dir / "neuromechfly_ypr_legs.json")]
        plans.append(load_body_plan(g1))
    for plan in plans:
        old = {k: v for k, v in body_plan_to_dict(plan).items() if not k.startswith("x-")}
        assert body_plan_sha256(plan) == json_sha256(old)


def test_plans_pickle_and_hash(fly_plan_path):
    for plan in (_load_quiet(fly_plan_path), mannequin()):
        back = pickle.loads(pickle.dumps(plan))
        assert back == plan and hash(back) == hash(plan)
        np.testing.assert_array_equal(back.neutral, plan.neutral)
