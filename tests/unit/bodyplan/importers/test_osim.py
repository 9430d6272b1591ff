"""OpenSim import checked against OpenSim's own ``getPositionInGround``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError, load_body_plan
from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.importers import ConversionWarning, plan_unit
from pipeline.bodyplan.importers.osim import import_osim
from pipeline.kinematics import forward_kinematics
from tests.fixtures.shared_data import SHARED

from .models import OSIM, OSIM_FILES, need

# make check skips it: runs OpenSim on full models
pytestmark = pytest.mark.slow

osim = need("opensim", "osim")
osim.Logger.setLevelString("error")


def _import(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_osim(path, **options)


def _vec(v) -> np.ndarray:
    return np.array([v.get(i) for i in range(3)])


POSE2SIM = SHARED / "data" / "pose2sim" / "opensim"
MODELS = [OSIM / n for n in OSIM_FILES] + [
    POSE2SIM / "Model_Pose2Sim_Body25b.osim",
    POSE2SIM / "Model_Pose2Sim_body25b_scaled.osim",
]


def _couplers(model) -> dict:
    out = {}
    for c in model.getConstraintSet():
        cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
        if cc is not None and c.get_isEnforced():
            out[cc.getDependentCoordinateName()] = (
                cc.getIndependentCoordinateNames().get(0),
                cc.getFunction(),
            )
    return out


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_body_origins_and_markers_equal_opensim(path, rng):
    """Knees, patellae and couplers exact: every body origin and marker within 1e-9 m of
    OpenSim's at the default pose and at random coordinates across the ranges."""
    plan = _import(path)
    assert plan.extras["x-source"]["approximations"] == []
    model = osim.Model(str(path))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    couplers = _couplers(model)
    worst = 0.0
    for trial in range(8):
        values = {}
        for c in coords:
            v = c.getDefaultValue()
            if trial and not c.get_locked() and c.getName() not in couplers:
                v = rng.uniform(max(c.getRangeMin(), -np.pi), min(c.getRangeMax(), np.pi))
            values[c.getName()] = v
        for dep, (ind, fn) in couplers.items():  # what the constraint enforces
            values[dep] = fn.calcValue(osim.Vector(1, values[ind]))
        for n, v in values.items():
            coords.get(n).setValue(state, v, False)
        model.realizePosition(state)
        pose = from_engine_configuration(plan, values)
        pos = forward_kinematics(plan, pose.dof_values)
        for body in model.getBodySet():
            got = pos[plan.joint_index(body.getName())]
            worst = max(worst, np.abs(got - _vec(body.getPositionInGround(state))).max())
        for marker in model.getMarkerSet():
            got = pos[plan.joint_index(marker.getName())]
            worst = max(worst, np.abs(got - _vec(marker.getLocationInGround(state))).max())
        back = to_engine_configuration(plan, pose.dof_values)
        for n, v in back.items():  # every coordinate back, the dependent ones too
            assert v == pytest.approx(values[n], abs=1e-12), n
    assert worst < 1e-9, (path.name, worst)
    assert plan.n_joints >= model.getNumBodies() + 1 + model.getNumMarkers()


@pytest.mark.parametrize(
    ("path", "n_couplings", "n_dofs"),
    [
        (OSIM / "gait2392_thelen2003muscle.osim", 0, 23),
        (OSIM / "Rajagopal2016.osim", 2, 37),
        (POSE2SIM / "Model_Pose2Sim_Body25b.osim", 20, 42),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_knees_patellae_and_couplers_import_exactly_without_warnings(path, n_couplings, n_dofs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        plan = import_osim(path, strict=True)
    assert plan.version == 3 and len(plan.couplings) == n_couplings
    assert plan.n_dofs == n_dofs  # dependent coordinates are not DOFs
    source = plan.extras["x-source"]
    assert source["approximations"] == [] and source["constraints_not_enforced"] == []
    knee = next(j for j in plan.joints if j.driven and j.dofs and j.dofs[-1].name == "knee_angle_r")
    assert {a.function.type for a in knee.driven} == {"SimmSpline"}
    if n_couplings:
        beta = next(c for c in plan.couplings if c.name == "knee_angle_r_beta")
        assert beta.coordinate == "knee_angle_r" and beta.function.type == "LinearFunction"
        assert "knee_angle_r_beta" not in plan.dof_names
        assert "knee_angle_r_beta" in source["engine_configuration"]["dependent"]


def _edit(src, dst, old: str, new: str, after: str = ""):
    text = src.read_text()
    start = text.index(after) if after else 0
    at = text.index(old, start)
    dst.write_text(text[:at] + new + text[at + len(old) :])
    return dst


def test_what_the_plan_cannot_express_is_named(tmp_path):
    # a function class without a body-plan function: frozen with a warning, strict refuses
    text = (OSIM / "gait2392_thelen2003muscle.osim").read_text()
    start = text.index('<CustomJoint name="knee_r">')
    a = text.index('<SimmSpline name="function">', start)
    b = text.index("</SimmSpline>", a) + len("</SimmSpline>")
    sine = (
        '<Sine name="function"><amplitude>0.01</amplitude><omega>1</omega><phase>0</phase></Sine>'
    )
    odd = tmp_path / "sine_knee.osim"
    odd.write_text(text[:a] + sine + text[b:])
    with pytest.warns(ConversionWarning, match=r'<CustomJoint name="knee_r"> \(line \d+\): '
                      r"translation1 \(Sine of knee_angle_r\) frozen"):  # fmt: skip
        plan = import_osim(odd)
    assert [a["joint"] for a in plan.extras["x-source"]["approximations"]] == ["knee_r"]
    with pytest.raises(BodyPlanError, match=r"translation1 \(Sine of knee_angle_r\).*strict"):
        import_osim(odd, strict=True)
    # a coupler OpenSim does not enforce: its dependent coordinate drives only splines
    loose = _edit(
        OSIM / "Rajagopal2016.osim",
        tmp_path / "loose_patella.osim",
        "<isEnforced>true</isEnforced>",
        "<isEnforced>false</isEnforced>",
        after='<CoordinateCouplerConstraint name="patellofemoral_knee_angle_r_con"',
    )
    with pytest.warns(ConversionWarning, match=r"patellofemoral_r.*knee_angle_r_beta"):
        plan = import_osim(loose)
    records = plan.extras["x-source"]["constraints_not_enforced"]
    assert [r["constraint"] for r in records] == ["patellofemoral_knee_angle_r_con"]
    assert [c.name for c in plan.couplings] == ["knee_angle_l_beta"]


def test_converter_cli_round_trip(tmp_path):
    from typer.testing import CliRunner

    import flows.cli.bodyplan_tools  # noqa: F401 (registers the commands)
    from flows.cli import app

    path = OSIM / "Rajagopal2016.osim"
    out = tmp_path / "rajagopal.json"
    result = CliRunner().invoke(app, ["body-plan", "convert", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "37 DOFs" in result.output
    back = load_body_plan(out)
    plan = _import(path)
    assert back == plan and back.version == 3 and json.loads(out.read_text())["version"] == 3
    q = np.random.default_rng(3).uniform(-0.5, 0.5, (4, plan.n_dofs))
    np.testing.assert_array_equal(forward_kinematics(back, q), forward_kinematics(plan, q))


def test_markers_locked_coordinates_and_units():
    plan = _import(OSIM / "Rajagopal2016.osim")
    assert {"RACR", "C7", "CLAV"} <= set(plan.joint_names)
    assert len(plan.extras["x-source"]["markers"]) == 66
    sub = plan.dof_names.index("subtalar_angle_r")  # locked: limited to its default
    assert plan.lower[sub] == plan.upper[sub]
    assert plan_unit(plan) == "m"
    assert "walker_knee_r" in plan.joint_names  # the joint centre, 9 mm off the tibia origin
    arm = _import(OSIM / "arm26.osim")
    assert {"r_acromion", "r_humerus_epicondyle", "r_radius_styloid"} <= set(arm.joint_names)
    assert arm.fixed_base and arm.n_dofs == 2


def test_bad_osim_files(tmp_path):
    text = (OSIM / "arm26.osim").read_text()
    cut = tmp_path / "cut.osim"
    cut.write_text(text[: len(text) // 3])
    with pytest.raises(
        BodyPlanError,
        match=r"cut\.osim: not a well-formed OpenSim model XML .* "
        r"line \d+ column \d+",
    ):
        import_osim(cut)
    odd = tmp_path / "odd.osim"
    odd.write_text(
        text.replace(
            '<CustomJoint name="r_shoulder"', '<ScapulothoracicJoint name="r_shoulder"', 1
        ).replace("</CustomJoint>", "</ScapulothoracicJoint>", 1)
    )
    with pytest.raises(
        BodyPlanError,
        match=r'odd\.osim: <ScapulothoracicJoint name="r_shoulder"> '
        r"\(line \d+\): joint type 'ScapulothoracicJoint' is not one of CustomJoint",
    ):
        import_osim(odd)
    broken = tmp_path / "broken.osim"
    broken.write_text(
        '<OpenSimDocument Version="40000"><Model name="m"><BodySet><objects>'
        '<Body name="b"><mass>oops</mass></Body></objects></BodySet></Model>'
        "</OpenSimDocument>"
    )
    with pytest.raises(BodyPlanError, match=r"broken\.osim: OpenSim cannot load the model"):
        import_osim(broken)


def test_coupler_scale_factor_as_opensim_assembles_it(tmp_path):
    scaled = _edit(
        OSIM / "Rajagopal2016.osim",
        tmp_path / "scaled_coupler.osim",
        "<scale_factor>1</scale_factor>",
        "<scale_factor>2</scale_factor>",
        after='<CoordinateCouplerConstraint name="patellofemoral_knee_angle_r_con"',
    )
    plan = _import(scaled)
    model = osim.Model(str(scaled))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    coords.get("knee_angle_r").setValue(state, 0.7, True)  # OpenSim assembles the dependent
    pose = from_engine_configuration(plan, {"knee_angle_r": 0.7})
    values = to_engine_configuration(plan, pose.dof_values)
    want = coords.get("knee_angle_r_beta").getValue(state)
    assert values["knee_angle_r_beta"] == pytest.approx(want, abs=1e-8)
    assert want == pytest.approx(1.4, abs=1e-8)


def test_unnormalized_translation_axis_as_opensim(tmp_path):
    text = (OSIM / "gait2392_thelen2003muscle.osim").read_text()
    start = text.index('<TransformAxis name="translation1">', text.index('"knee_r">'))
    a = text.index("<axis>", start)
    b = text.index("</axis>", a)
    odd = tmp_path / "long_axis.osim"
    odd.write_text(text[:a] + "<axis>2 0 0" + text[b:])  # OpenSim normalizes the axis
    plan = _import(odd)
    model = osim.Model(str(odd))
    state = model.initSystem()
    model.getCoordinateSet().get("knee_angle_r").setValue(state, -1.2, False)
    model.realizePosition(state)
    pose = from_engine_configuration(plan, {"knee_angle_r": -1.2})
    got = forward_kinematics(plan, pose.dof_values)[plan.joint_index("tibia_r")]
    want = _vec(model.getBodySet().get("tibia_r").getPositionInGround(state))
    np.testing.assert_allclose(got, want, atol=1e-12)
