"""load_body_plan picks the importer; every imported plan saves and loads back identical."""

from __future__ import annotations

import json
import warnings
from importlib.resources import files

import pytest

from pipeline.bodyplan import (
    BodyPlanError,
    body_plan_sha256,
    body_plan_to_dict,
    load_body_plan,
    save_body_plan,
)
from pipeline.bodyplan.importers import guess_format, plan_unit

from .models import BVH, MJCF, MJCF_FILES, OSIM, OSIM_FILES, URDF, URDF_FILES, need

CASES = (
    [("mjcf", MJCF / n) for n in MJCF_FILES]
    + [("urdf", URDF / n) for n in URDF_FILES]
    + [("osim", OSIM / n) for n in OSIM_FILES]
    + [("bvh", BVH / "cmu_01_01.bvh")]
)
EXTRA = {"mjcf": ("mujoco", "mjcf"), "urdf": ("yourdfpy", "urdf"), "osim": ("opensim", "osim")}


@pytest.mark.parametrize(("fmt", "path"), CASES, ids=lambda c: getattr(c, "name", c))
def test_imported_plan_round_trips(fmt, path, tmp_path):
    if fmt in EXTRA:
        need(*EXTRA[fmt])
    assert guess_format(path) == fmt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = load_body_plan(path)
        saved = save_body_plan(plan, tmp_path / "plan.json")
        back = load_body_plan(saved)
    assert back == plan
    assert body_plan_to_dict(back) == body_plan_to_dict(plan)  # x-source and the unit too
    assert plan_unit(back) == plan_unit(plan) is not None
    assert body_plan_sha256(back) == body_plan_sha256(plan)
    data = json.loads(saved.read_text())
    jsonschema = pytest.importorskip("jsonschema", reason="the dev extra has jsonschema")
    schema = json.loads(files("pipeline.bodyplan").joinpath("bodyplan.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)  # the documented format
    assert data["x-source"]["format"] == fmt
    assert data.get("unit", data.get("x-unit")) == plan_unit(plan)  # v2 field or v1 x-unit
    assert data["x-source"]["file"] == str(path)


def test_format_by_content_and_forced(tmp_path):
    need("mujoco", "mjcf")
    copy = tmp_path / "robot.model"
    copy.write_text((MJCF / "franka_panda.nomesh.xml").read_text())
    assert guess_format(copy) == "mjcf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_body_plan(copy).n_dofs == 9
        assert load_body_plan(copy, format="mjcf", sites=True).n_dofs == 9
    with pytest.raises(BodyPlanError, match="format 'step' is not importable"):
        load_body_plan(copy, format="step")
    with pytest.raises(BodyPlanError, match=r"options \['sites'\] apply to imported formats"):
        load_body_plan(tmp_path / "x.json", sites=True)
    with pytest.raises(BodyPlanError, match="bvh import: .*unexpected keyword argument 'sites'"):
        load_body_plan(BVH / "cmu_01_01.bvh", sites=True)
