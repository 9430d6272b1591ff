"""The shipped JSON Schema documents the format: real files pass, broken ones fail."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import pytest

from pipeline.bodyplan import body_plan_to_dict, load_body_plan, mannequin, save_body_plan
from tests.fixtures.bodyplan_samples import MANNEQUIN_JSON, small_v1, small_v2


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(files("pipeline.bodyplan").joinpath("bodyplan.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _assert_valid(validator, data):
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, errors[:3]


def test_real_files_validate(validator, fly_plan_path):
    _assert_valid(validator, json.loads(fly_plan_path.read_text()))
    _assert_valid(validator, json.loads(MANNEQUIN_JSON.read_text()))


@pytest.mark.parametrize("make", [small_v1, small_v2])
def test_samples_and_saved_files_validate(validator, make, tmp_path):
    _assert_valid(validator, make())
    saved = save_body_plan(load_body_plan(make()), tmp_path / "saved.json")
    _assert_valid(validator, json.loads(saved.read_text()))


def test_saved_fly_validates(validator, fly_plan_path, tmp_path):
    saved = save_body_plan(load_body_plan(fly_plan_path), tmp_path / "fly.json")
    _assert_valid(validator, json.loads(saved.read_text()))
    _assert_valid(validator, body_plan_to_dict(mannequin()))


def _without_version(data):
    del data["version"]


def _set(*path):
    *keys, last, value = path

    def mutate(data):
        for key in keys:
            data = data[key]
        data[last] = value

    return mutate


@pytest.mark.parametrize(
    ("make", "mutate"),
    [
        pytest.param(small_v1, _set("joint", []), id="unknown-top-key"),
        pytest.param(small_v1, _set("joints", 1, "offset", [0, 0, 0]), id="unknown-joint-key"),
        pytest.param(small_v1, _set("joints", 1, "dofs", 0, "type", "hnge"), id="dof-type"),
        pytest.param(small_v1, _set("joints", 1, "dofs", 0, "axis", [0, 0, 0]), id="zero-axis"),
        pytest.param(small_v1, _set("fixed_base", 1), id="fixed-base-not-bool"),
        pytest.param(small_v1, _set("joints", 1, "weight_scaler", -1), id="negative-weight"),
        pytest.param(small_v1, _set("version", 4), id="unknown-version"),
        pytest.param(small_v1, _set("joints", 1, "kind", "hinge"), id="v2-field-in-v1"),
        pytest.param(small_v2, _without_version, id="v2-file-without-version"),
        pytest.param(small_v2, _set("joints", 3, "dofs", []), id="kind-with-dofs"),
        pytest.param(small_v2, _set("joints", 2, "swing_limit", 4.0), id="swing-above-pi"),
        pytest.param(small_v2, _set("joints", 3, "swing_limit", 1.0), id="field-not-for-kind"),
        pytest.param(small_v2, _set("joints", 2, "kind", "balll"), id="unknown-kind"),
        pytest.param(small_v2, _set("joints", 4, "neutral", [0.0]), id="universal-neutral"),
    ],
)
def test_invalid_files_fail_the_schema(validator, make, mutate):
    data = make()
    mutate(data)
    assert not validator.is_valid(data)


def _properties(node, path=""):
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            yield f"{path}/{name}", sub
        for key, sub in node.items():
            yield from _properties(sub, f"{path}/{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            yield from _properties(sub, f"{path}/{i}")


def test_every_field_is_described(validator):
    schema = validator.schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    missing = [
        path
        for path, sub in _properties(schema)
        if "description" not in sub and not path.startswith(("/if/", "/then/", "/allOf/"))
    ]
    assert not missing
    for name in ("dofs_joint", "dof", "hinge_joint", "ball_joint", "universal_joint"):
        assert schema["$defs"][name]["additionalProperties"] is False
        assert "^x-" in schema["$defs"][name]["patternProperties"]
