"""Version 3: driven axes and couplings load, validate, save and reload unchanged."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import pytest

from pipeline.bodyplan import BodyPlanError, load_body_plan, save_body_plan
from pipeline.bodyplan.io import body_plan_sha256, body_plan_to_dict
from pipeline.bodyplan.model import DrivenAxis
from tests.fixtures.bodyplan_samples import small_v1, small_v2

from .coupled_samples import coupled


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(files("pipeline.bodyplan").joinpath("bodyplan.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_coupled_plan_loads_with_independent_coordinates_only():
    plan = load_body_plan(coupled())
    assert plan.version == 3 and plan.coupled
    assert plan.dof_names == ("hip", "knee")  # driven axes and beta are not DOFs
    knee = plan.joints[plan.joint_index("knee")]
    assert [type(a).__name__ for a in knee.axes] == ["DrivenAxis"] * 2 + ["Dof", "DrivenAxis"]
    assert [d.after for d in knee.driven] == [0, 0, 1]
    assert plan.couplings[0].name == "beta" and plan.couplings[0].coordinate == "knee"


def test_round_trip_is_exact_and_schema_valid(tmp_path, validator):
    plan = load_body_plan(coupled())
    path = save_body_plan(plan, tmp_path / "coupled.json")
    data = json.loads(path.read_text())
    assert data["version"] == 3
    assert not list(validator.iter_errors(data))
    back = load_body_plan(path)
    assert back == plan and hash(back) == hash(plan)
    assert body_plan_sha256(back) == body_plan_sha256(plan)
    assert body_plan_to_dict(back)["joints"] == data["joints"]


@pytest.mark.parametrize(("make", "version"), [(small_v1, 1), (small_v2, 2)])
def test_old_plans_keep_their_version(make, version, tmp_path, validator):
    plan = load_body_plan(make())
    assert plan.version == version and not plan.coupled
    data = json.loads(save_body_plan(plan, tmp_path / "p.json").read_text())
    assert data.get("version", 1) == version
    assert not list(validator.iter_errors(data))


def _schema_rejects(validator, data) -> bool:
    return bool(list(validator.iter_errors(data)))


def test_version_3_fields_need_version_3(validator):
    data = coupled()
    data["version"] = 2
    with pytest.raises(BodyPlanError, match=r"joint 'knee' dof 0.*'function'.*version-3 field"):
        load_body_plan(data)
    assert _schema_rejects(validator, data)
    data = small_v2()
    data["couplings"] = coupled()["couplings"]
    with pytest.raises(BodyPlanError, match=r"'couplings'.*version-3 field"):
        load_body_plan(data)
    assert _schema_rejects(validator, data)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (
            lambda d: d["joints"][2]["dofs"][0].update(coordinate="kne"),
            r"joint 'knee'.*driven axis names coordinate 'kne'.*known: hip, knee, beta",
        ),
        (
            lambda d: d["couplings"][0].update(coordinate="gamma"),
            r"couplings\[0\]\.coordinate.*'gamma' is not a DOF or an earlier coupling",
        ),
        (
            lambda d: d["couplings"][0].update(name="hip"),
            r"couplings\[0\]\.name.*'hip' is already a DOF or coupling name",
        ),
        (
            lambda d: d["joints"][2]["dofs"][0].update(neutral=0.0),
            r"joint 'knee'.*dof 0.*unknown field 'neutral'|'neutral'",
        ),
        (
            lambda d: d["joints"][2]["dofs"][0]["function"].update(type="GCVSpline"),
            r"'function\.type': 'GCVSpline' is not one of",
        ),
    ],
)
def test_bad_coupled_fields_are_named(mutate, match, validator):
    data = coupled()
    mutate(data)
    with pytest.raises(BodyPlanError, match=match):
        load_body_plan(data)


def test_driven_axis_is_frozen():
    plan = load_body_plan(coupled())
    axis = plan.joints[plan.joint_index("patella")].driven[0]
    assert isinstance(axis, DrivenAxis)
    with pytest.raises(AttributeError):
        axis.coordinate = "hip"  # type: ignore[misc]


def test_edits_keep_version_3_or_refuse_breaking_couplings():
    from pipeline.bodyplan.editing import place, rename

    plan = load_body_plan(coupled())
    renamed = rename(plan, {"toe": "foot_tip"})
    assert renamed.version == 3 and renamed.couplings == plan.couplings
    assert load_body_plan(body_plan_to_dict(renamed)) == renamed
    with pytest.raises(BodyPlanError, match=r"coordinates .*knee.* named by driven axes"):
        place(plan, "left_")
