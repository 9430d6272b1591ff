"""A body plan's length unit: the version-2 field ``unit``, ``x-unit`` in version 1."""

from __future__ import annotations

import json

import pytest

from pipeline.bodyplan import load_body_plan, save_body_plan
from pipeline.bodyplan.io import body_plan_sha256, body_plan_to_dict
from pipeline.errors import BodyPlanError
from tests.fixtures.bodyplan_samples import small_v1, small_v2


def test_version_2_declares_its_unit():
    data = {**small_v2(), "unit": "mm"}
    plan = load_body_plan(data)
    assert plan.unit == "mm"
    assert body_plan_to_dict(plan)["unit"] == "mm"


def test_version_1_says_it_as_x_unit_and_keeps_it():
    plan = load_body_plan({**small_v1(), "x-unit": "m"})
    assert plan.unit == "m"
    out = body_plan_to_dict(plan)
    assert out["x-unit"] == "m" and "unit" not in out and "version" not in out
    assert body_plan_sha256(plan) == body_plan_sha256(load_body_plan(small_v1()))


def test_unit_is_a_version_2_field():
    with pytest.raises(BodyPlanError, match=r"field 'unit': is a version-2 field.*\"x-unit\""):
        load_body_plan({**small_v1(), "unit": "mm"}, source="fly.json")
    with pytest.raises(BodyPlanError, match=r"field 'unit': expected a string"):
        load_body_plan({**small_v2(), "unit": 1000})


def test_the_unit_survives_a_save(tmp_path):
    plan = load_body_plan({**small_v2(), "unit": "cm"})
    path = save_body_plan(plan, tmp_path / "p.json")
    assert json.loads(path.read_text())["unit"] == "cm"
    assert load_body_plan(path).unit == "cm"


def test_the_schema_knows_the_field(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    schema = json.loads(files("pipeline.bodyplan").joinpath("bodyplan.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({**small_v2(), "unit": "mm"})
    assert not validator.is_valid({**small_v1(), "unit": "mm"})
    assert validator.is_valid({**small_v1(), "x-unit": "mm"})
