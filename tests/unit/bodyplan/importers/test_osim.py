"""OpenSim import checked against OpenSim's own ``getPositionInGround``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError
from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.importers import ConversionWarning, plan_unit
from pipeline.bodyplan.importers.osim import import_osim
from pipeline.kinematics import forward_kinematics

from .models import OSIM, OSIM_FILES, need

osim = need("opensim", "osim")
osim.Logger.setLevelString("error")


def _import(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_osim(path, **options)


def _vec(v) -> np.ndarray:
    return np.array([v.get(i) for i in range(3)])


def _below(plan, names: set[str]) -> set[str]:
    """Joints at or below any of ``names``."""
    out = set()
    for i, joint in enumerate(plan.joints):
        k = i
        while k >= 0:
            if plan.joints[k].name in names:
                out.add(joint.name)
                break
            k = int(plan.parent_indices[k])
    return out


@pytest.mark.parametrize("name", OSIM_FILES)
def test_body_origins_and_markers_equal_opensim(name, rng):
    path = OSIM / name
    plan = _import(path)
    source = plan.extras["x-source"]
    approx = {a["child"]: a for a in source["approximations"]}
    spline_coords = {c for a in source["approximations"] for c in a["coordinates"]}
    model = osim.Model(str(path))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    couplers = {}
    for c in model.getConstraintSet():
        cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
        if cc is not None:
            couplers[cc.getDependentCoordinateName()] = (
                cc.getIndependentCoordinateNames().get(0),
                cc.getFunction(),
            )
    for trial in range(12):
        values = {}
        for c in coords:
            lo, hi = c.getRangeMin(), c.getRangeMax()
            v = c.getDefaultValue()
            free = trial and not c.get_locked() and c.getName() not in couplers
            if free and (trial % 2 or c.getName() not in spline_coords):
                v = rng.uniform(lo, hi)  # even trials: spline coordinates at default
            values[c.getName()] = v
        for dep, (ind, fn) in couplers.items():  # what the constraint enforces
            values[dep] = fn.calcValue(osim.Vector(1, values[ind]))
        for n, v in values.items():
            coords.get(n).setValue(state, v, False)
        model.realizePosition(state)
        pose = from_engine_configuration(plan, values)
        pos = forward_kinematics(plan, pose.dof_values)
        at_default = trial == 0 or trial % 2 == 0
        exact_below = set() if at_default else _below(plan, set(approx))
        for body in model.getBodySet():
            err = np.abs(
                pos[plan.joint_index(body.getName())] - _vec(body.getPositionInGround(state))
            )
            if body.getName() in approx:  # frozen spline: the stated bound
                assert err.max() <= approx[body.getName()]["max_origin_error"] + 1e-9
            elif body.getName() not in exact_below:
                assert err.max() < 1e-9, (name, body.getName(), err.max())
            else:  # below a frozen spline: the knee's error carried down the leg
                assert err.max() < 0.05
        for marker in model.getMarkerSet():
            k = plan.joint_index(marker.getName())
            parent = marker.getParentFrame().findBaseFrame().getName()
            if parent not in exact_below and parent not in approx:
                np.testing.assert_allclose(
                    pos[k], _vec(marker.getLocationInGround(state)), atol=1e-9
                )
        back = to_engine_configuration(plan, pose.dof_values)
        for n, v in back.items():
            if any(
                e["coordinate"] == n and "dof" in e
                for e in source["engine_configuration"]["entries"]
            ):
                assert v == pytest.approx(values[n], abs=1e-12)
    assert plan.n_joints >= model.getNumBodies() + 1 + model.getNumMarkers()


def test_spline_coupled_knees_warn_and_strict_refuses():
    with pytest.warns(ConversionWarning) as record:
        plan = import_osim(OSIM / "gait2392_thelen2003muscle.osim")
    texts = [str(w.message) for w in record if "frozen" in str(w.message)]
    assert any('<CustomJoint name="knee_r"> (line' in t and "knee_angle_r" in t for t in texts)
    bound = {a["joint"]: a["max_origin_error"] for a in plan.extras["x-source"]["approximations"]}
    assert set(bound) == {"knee_r", "knee_l"} and 0.0 < bound["knee_r"] < 0.05  # metres
    assert "knee_angle_r" in plan.dof_names  # the linear rotation stays a hinge
    with pytest.raises(
        BodyPlanError,
        match=r'<CustomJoint name="knee_r"> \(line \d+\): '
        r"translation1 \(SimmSpline of knee_angle_r\).*strict import",
    ):
        import_osim(OSIM / "gait2392_thelen2003muscle.osim", strict=True)


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
