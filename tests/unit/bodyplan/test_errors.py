"""Bad body-plan files: one BodyPlanError naming file, joint, DOF, field and the choices."""

from __future__ import annotations

import json
import math
import pickle
import re

import pytest

from pipeline.bodyplan import BodyPlanError, load_body_plan
from tests.fixtures.bodyplan_samples import small_v1, small_v2


def _set(*path):
    *keys, last, value = path

    def mutate(data):
        for key in keys:
            data = data[key]
        data[last] = value

    return mutate


def _del(*path):
    *keys, last = path

    def mutate(data):
        for key in keys:
            data = data[key]
        del data[last]

    return mutate


def _swap(i, j):
    def mutate(data):
        joints = data["joints"]
        joints[i], joints[j] = joints[j], joints[i]

    return mutate


def _case(base, mutate, joint, dof, field, reason, id):
    return pytest.param(base, mutate, (joint, dof, field), reason, id=id)


J = "joints"
_HINGE_X = {"type": "hinge", "axis": [1, 0, 0], "neutral": 0}
# fmt: off
# (base, mutation, joint, dof index, field, message regex, id)
V1_CASES = [
    _case("v1", _del(J, 1, "offset_pos"), "upper", None, "offset_pos",
          "missing required field", "missing-joint-field"),
    _case("v1", _del(J, 1, "dofs", 0, "neutral"), "upper", 0, "neutral",
          "missing required field", "missing-dof-field"),
    _case("v1", _del(J, 2, "dofs"), "lower", None, "dofs",
          "missing required field", "missing-dofs"),
    _case("v1", _del("fixed_base"), None, None, "fixed_base",
          "missing required field", "missing-top-field"),
    _case("v1", _set("fixed_base", 1), None, None, "fixed_base",
          "expected true or false, got number 1", "wrong-type-bool"),
    _case("v1", _set(J, 1, "dofs", 0, "neutral", True), "upper", 0, "neutral",
          "expected a number, got boolean true", "bool-is-not-a-number"),
    _case("v1", _set(J, 2, "offset_pos", "1,0,0"), "lower", None, "offset_pos",
          "expected an array, got string '1,0,0'", "wrong-type-array"),
    _case("v1", _set(J, 2, "offset_pos", [1, 0]), "lower", None, "offset_pos",
          "expected 3 numbers, got array of length 2", "wrong-length"),
    _case("v1", _set(J, 2, "name", 7), 2, None, "name",
          "expected a string, got number 7", "name-not-string"),
    _case("v1", _set(J, 1, "dofs", 1, "type", "hnge"), "upper", 1, "type",
          "'hnge' is not one of hinge, slide", "unknown-dof-type"),
    _case("v1", _set(J, 1, "offset", [0, 0, 0]), "upper", None, "offset",
          "unknown key; valid keys: name, parent, offset_pos, offset_quat, weight_scaler, dofs",
          "unknown-joint-key"),
    _case("v1", _set("joint", []), None, None, "joint",
          "unknown key; valid keys: fixed_base, joints, version", "unknown-top-key"),
    _case("v1", _set(J, 1, "dofs", 0, "lmits", None), "upper", 0, "lmits",
          "unknown key; valid keys: type, axis, neutral, limits, weight_scaler, name",
          "unknown-dof-key"),
    _case("v1", _set(J, 3, "name", "lower"), "lower", None, "name",
          r"duplicate joint name 'lower' \(joint #3\)", "duplicate-joint"),
    _case("v1", _set(J, 3, "parent", "lowr"), "tip", None, "parent",
          "'lowr' is not a joint; known joints: root, upper, lower, tip", "unknown-parent"),
    _case("v1", _swap(2, 3), "tip", None, "parent",
          r"parent 'lower' \(joint #3\) is listed after its child \(joint #2\)",
          "parent-after-child"),
    _case("v1", _set(J, 1, "parent", "lower"), "upper", None, "parent",
          "cycle: upper -> lower -> upper", "cycle"),
    _case("v1", _set(J, 1, "parent", "upper"), "upper", None, "parent",
          "cycle: upper -> upper", "self-parent"),
    _case("v1", _set(J, 0, "parent", "tip"), None, None, "joints",
          'no root joint: exactly one joint needs "parent": null', "no-root"),
    _case("v1", _set(J, 3, "parent", None), "tip", None, "parent",
          r"several root joints \('root', 'tip'\)", "several-roots"),
    _case("v1", _set(J, 2, "offset_pos", [0, math.nan, 0]), "lower", None, "offset_pos",
          "item 1: must be a finite number, got nan", "nan"),
    _case("v1", _set(J, 1, "dofs", 0, "neutral", math.inf), "upper", 0, "neutral",
          "must be a finite number, got inf", "infinity"),
    _case("v1", _set(J, 1, "dofs", 0, "axis", [0, 0, 0]), "upper", 0, "axis",
          r"axis \[0.0, 0.0, 0.0\] has zero length", "zero-axis"),
    _case("v1", _set(J, 2, "offset_quat", [0, 0, 0, 0]), "lower", None, "offset_quat",
          "quaternion .* has zero length", "zero-quaternion"),
    _case("v1", _set(J, 1, "dofs", 0, "limits", [1, -1]), "upper", 0, "limits",
          "min 1.0 is greater than max -1.0", "limits-min-above-max"),
    _case("v1", _set(J, 1, "dofs", 0, "limits", [1]), "upper", 0, "limits",
          r"expected \[min, max\], got array of length 1", "limits-shape"),
    _case("v1", _set(J, 1, "dofs", 0, "neutral", 2.0), "upper", 0, "neutral",
          r"2.0 is outside the limits \[-1.0, 1.0\]", "neutral-outside-limits"),
    _case("v1", _set(J, 1, "weight_scaler", -1), "upper", None, "weight_scaler",
          "must be >= 0, got -1", "negative-joint-weight"),
    _case("v1", _set(J, 1, "dofs", 1, "weight_scaler", -0.5), "upper", 1, "weight_scaler",
          "must be >= 0, got -0.5", "negative-dof-weight"),
    _case("v1", _set(J, 1, "dofs", 1, "name", "upper_yaw"), "upper", 1, "name",
          r"duplicate DOF name 'upper_yaw' \(also joint 'upper' dof 0\)", "duplicate-dof-name"),
    _case("v1", _set(J, 0, "dofs", [_HINGE_X | {"name": "lower/0"}]), "lower", 0, "name",
          r"duplicate DOF name 'lower/0' \(also joint 'root' dof 0\)",
          "dof-name-clashes-with-default"),
    _case("v1", _set(J, []), None, None, "joints",
          "must list at least one joint", "no-joints"),
    _case("v1", _set(J, 1, "kind", "ball"), "upper", None, "kind",
          'is a version-2 field but the file does not declare "version": 2', "v2-kind-in-v1-file"),
    _case("v1", _set(J, 2, "swing_limit", 1.0), "lower", None, "swing_limit",
          'is a version-2 field but the file does not declare "version": 2', "v2-field-in-v1-file"),
    _case("v1", _set("version", 4), None, None, "version",
          "unknown version number 4; known versions: 1, 2, 3", "unknown-version"),
    _case("v1", _set("version", "2"), None, None, "version",
          "unknown version string '2'; known versions: 1, 2, 3", "version-as-string"),
]
V2_CASES = [
    _case("v2", _set(J, 2, "kind", "balll"), "shoulder", None, "kind",
          "'balll' is not one of fixed, hinge, ball, universal, prismatic", "unknown-kind"),
    _case("v2", _set(J, 3, "swing_limit", 1.0), "elbow", None, "swing_limit",
          "not allowed for kind 'hinge'; allowed: axis, limits, neutral, dof_weight_scaler",
          "field-not-allowed-for-kind"),
    _case("v2", _set(J, 6, "axis", [1, 0, 0]), "finger", None, "axis",
          "not allowed for kind 'fixed'; allowed: none", "field-on-fixed"),
    _case("v2", _set(J, 3, "dofs", []), "elbow", None, "kind",
          "'kind' and 'dofs' cannot both be given", "kind-with-dofs"),
    _case("v2", _set(J, 5, "axis", [0, 0, 1]), "knuckle", None, "axis",
          "is a joint-kind field; it needs 'kind'", "kind-field-without-kind"),
    _case("v2", _del(J, 5, "dofs"), "knuckle", None, "dofs",
          r"missing required field \('dofs' or, in version 2, 'kind'\)", "no-dofs-no-kind"),
    _case("v2", _del(J, 3, "axis"), "elbow", None, "axis",
          "missing required field", "hinge-without-axis"),
    _case("v2", _del(J, 4, "axes"), "wrist", None, "axes",
          "missing required field", "universal-without-axes"),
    _case("v2", _set(J, 2, "swing_limit", 0.0), "shoulder", None, "swing_limit",
          r"half-angle 0.0 rad is not in \(0, pi\]", "swing-zero"),
    _case("v2", _set(J, 2, "swing_limit", [1.0, 3.5]), "shoulder", None, "swing_limit",
          r"half-angle 3.5 rad is not in \(0, pi\]", "swing-above-pi"),
    _case("v2", _set(J, 2, "swing_limit", [1.0, 0.5, 0.2]), "shoulder", None, "swing_limit",
          "expected a half-angle or two, got array of length 3", "swing-shape"),
    _case("v2", _set(J, 2, "twist_limit", [1, -1]), "shoulder", None, "twist_limit",
          "min 1.0 is greater than max -1.0", "twist-min-above-max"),
    _case("v2", _set(J, 4, "limits", [[-1, 1], [0.5, -0.5]]), "wrist", None, "limits",
          "secondary: min 0.5 is greater than max -0.5", "universal-min-above-max"),
    _case("v2", _set(J, 4, "limits", [[-1, 1]]), "wrist", None, "limits",
          r"expected \[\[min, max\], \[min, max\]\]", "universal-limits-shape"),
    _case("v2", _set(J, 3, "neutral", 3.0), "elbow", None, "neutral",
          r"3.0 is outside the limits \[0.0, 2.5\]", "hinge-neutral-outside"),
    _case("v2", _set(J, 1, "limits", [0.1, 0.2]), "slider", None, "neutral",
          r"0.05 is outside the limits \[0.1, 0.2\]", "prismatic-neutral-outside"),
    _case("v2", _set(J, 4, "neutral", [1.5, 0.0]), "wrist", None, "neutral",
          r"1.5 is outside the limits \[-1.0, 1.0\]", "universal-neutral-outside"),
    _case("v2", _set(J, 2, "neutral", [0.9, 0.3, 0.0]), "shoulder", None, "neutral",
          r"swing \(0.9, 0.3\) is outside the swing cone with half-angles \(1.0, 0.5\) rad",
          "ball-neutral-outside-cone"),
    _case("v2", _set(J, 2, "neutral", [0.0, 0.0, 2.0]), "shoulder", None, "neutral",
          r"2.0 is outside the limits \[-1.0, 1.0\]", "ball-twist-neutral-outside"),
    _case("v2", _set(J, 2, "neutral", [0.0, 0.0]), "shoulder", None, "neutral",
          "expected 3 numbers, got array of length 2", "ball-neutral-shape"),
    _case("v2", _set(J, 4, "axes", [[0, 0, 1], [0, 0, -2]]), "wrist", None, "axes",
          r"secondary axis \[0.0, 0.0, -2.0\] is parallel to the primary", "universal-parallel"),
    _case("v2", _set(J, 4, "axes", [[0, 0, 1]]), "wrist", None, "axes",
          r"expected \[primary, secondary\], got array of length 1", "universal-one-axis"),
    _case("v2", _set(J, 2, "axis", [0, 0, 0]), "shoulder", None, "axis",
          r"axis \[0.0, 0.0, 0.0\] has zero length", "ball-zero-axis"),
    _case("v2", _set(J, 3, "dof_weight_scaler", -2), "elbow", None, "dof_weight_scaler",
          "must be >= 0, got -2", "negative-dof-weight-scaler"),
    _case("v2", _set(J, 3, "swing", 1.0), "elbow", None, "swing",
          "unknown key; valid keys: name, parent, .*, kind, axis, axes, limits, swing_limit, "
          "twist_limit, neutral, dof_weight_scaler",
          "unknown-key-v2"),
    _case("v2", _set(J, 5, "dofs", 0, "name", "shoulder/twist"), "knuckle", 0, "name",
          r"duplicate DOF name 'shoulder/twist' \(also joint 'shoulder' dof 2\)",
          "dof-name-clashes-with-kind"),
    _case("v2", _set(J, 5, "dofs", 0, "type", "swing"), "knuckle", 0, "type",
          "'swing' is not one of hinge, slide", "swing-type-in-dofs"),
]
# fmt: on


def _location(path, joint, dof, field):
    where = str(path)
    if joint is not None:
        where += f": joint #{joint}" if isinstance(joint, int) else f": joint '{joint}'"
    if dof is not None:
        where += f" dof {dof}"
    if field is not None:
        where += f": field '{field}'"
    return where


@pytest.mark.parametrize(("base", "mutate", "where", "reason"), V1_CASES + V2_CASES)
def test_bad_plan_names_file_joint_field(tmp_path, base, mutate, where, reason):
    data = small_v1() if base == "v1" else small_v2()
    mutate(data)
    path = tmp_path / "plan_under_test.json"
    path.write_text(json.dumps(data))  # NaN / Infinity written as JSON extensions
    joint, dof, field = where
    pattern = "^" + re.escape(_location(path, joint, dof, field)) + ": " + reason
    with pytest.raises(BodyPlanError, match=pattern) as info:
        load_body_plan(path)
    err = info.value
    assert (err.file, err.joint, err.dof, err.field) == (str(path), joint, dof, field)
    assert isinstance(err, ValueError)


def test_dict_input_uses_source_or_placeholder():
    data = small_v1()
    data["joints"][1]["dofs"][1]["type"] = "hnge"
    with pytest.raises(BodyPlanError, match=r"^<dict>: joint 'upper' dof 1: field 'type'"):
        load_body_plan(data)
    with pytest.raises(BodyPlanError, match=r"^neuromechfly\.json: joint 'upper' dof 1"):
        load_body_plan(data, source="neuromechfly.json")


def test_missing_file(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(BodyPlanError, match=re.escape(str(path)) + ": file not found"):
        load_body_plan(path)


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(BodyPlanError, match="is a directory"):
        load_body_plan(tmp_path)


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "fixed_base": false,\n  "joints": [\n    {"name": "a",}\n  ]\n}\n')
    with pytest.raises(
        BodyPlanError,
        match=re.escape(str(path)) + r": not valid JSON: .* at line 4 column 18",
    ):
        load_body_plan(path)


def test_repeated_key_is_refused(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text('{"fixed_base": false, "fixed_base": true, "joints": []}')
    with pytest.raises(
        BodyPlanError, match=r"twice\.json: not valid JSON: key 'fixed_base' appears twice"
    ):
        load_body_plan(path)


def test_top_level_must_be_an_object(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[]")
    with pytest.raises(BodyPlanError, match=r"list\.json: expected an object, got array"):
        load_body_plan(path)


def test_error_survives_pickling():
    err = BodyPlanError("f.json", "bad", joint="j", dof=2, field="axis")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) == "f.json: joint 'j' dof 2: field 'axis': bad"
    assert (back.file, back.joint, back.dof, back.field) == ("f.json", "j", 2, "axis")
