"""The template prior holds what the data cannot see; bad input gets one clear error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.calibrate import CalibrationConfig, calibrate, load_calibration, resolve
from pipeline.errors import BodyPlanError, CalibrationError
from pipeline.synth import body_size
from pipeline.tracks.schema import make_tracks_dataset
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render

QUICK = CalibrationConfig(n_frames=200)


def _hide(tracks, joints):
    """The tracks with every keypoint of ``joints`` missing."""
    out = tracks.copy(deep=True)
    out["position"].loc[{"keypoint": list(joints)}] = np.nan
    return out


@pytest.mark.parametrize("global_scale", [True, False])
def test_unobservable_segment_stays_at_template_length(rng, global_scale):
    template = mannequin_template()
    subject, theta, params = make_subject(template, rng, scale=1.0)
    theta[1 + params.group_names.index("toe_l")] = 0.15  # 15 % longer toes, never seen
    subject = params.apply(theta)
    session = render(subject, rng, n_frames=400)
    spec = {**template.calibration, "global_scale": global_scale}
    config = dataclasses.replace(QUICK, spec=spec)
    cal = calibrate(template, _hide(session.tracks, ["toe_l", "toe_r"]), config)
    segments = {s["joint"]: s for s in cal.record["segments"]}
    toe = segments["toe_l"]
    assert not toe["observed"]
    # the template's proportion: its length times the overall scale (1 when not fitted)
    assert toe["scale"] == pytest.approx(cal.global_scale, abs=1e-6)
    assert toe["length"] == pytest.approx(cal.global_scale * toe["template_length"], rel=1e-6)
    if not global_scale:
        assert toe["length"] == pytest.approx(toe["template_length"], rel=1e-9)
    knee = segments["knee_l"]
    assert knee["observed"] and knee["scale_std"] < 0.01
    true_knee = np.linalg.norm(subject.joints[subject.joint_index("knee_l")].offset_pos)
    assert knee["length"] == pytest.approx(true_knee, rel=0.02)


def test_saved_calibration_is_a_version_2_plan_that_loads_anywhere(rng, tmp_path):
    template = mannequin_template()
    subject, _, _ = make_subject(template, rng)
    cal = calibrate(template, render(subject, rng, n_frames=300).tracks, QUICK)
    path = cal.save(tmp_path / "subject.json")
    plan = load_body_plan(path)
    assert plan.version == 2 and plan == cal.plan
    again = load_calibration(path)
    assert again.record["template_sha256"] == cal.record["template_sha256"]
    assert again.record["sessions"][0]["frames"] == cal.record["sessions"][0]["frames"]
    assert len(again.record["sessions"][0]["frames"]) == 200


def test_too_few_frames_is_an_error(rng):
    template = mannequin_template()
    session = render(template, rng, n_frames=30)
    with pytest.raises(CalibrationError, match=r"too few frames to calibrate: 30 frames.*50"):
        calibrate(template, session.tracks, QUICK)


def test_listed_segment_without_observed_keypoint_is_an_error(rng):
    spec = {"symmetry": [["toe_l", "toe_r"]]}
    plan = dataclasses.replace(mannequin(), calibration=spec)
    session = render(plan, rng, n_frames=200)
    with pytest.raises(CalibrationError, match=r"symmetry group 'toe_l'.*no observed keypoint"):
        calibrate(plan, _hide(session.tracks, ["toe_l", "toe_r"]), QUICK)


def test_listed_marker_without_observed_keypoint_is_an_error(rng):
    template = mannequin_template()
    session = render(template, rng, n_frames=200)
    with pytest.raises(CalibrationError, match=r"marker 'heel_l'.*no observed keypoint"):
        calibrate(template, _hide(session.tracks, ["heel_l"]), QUICK)


def test_symmetry_group_naming_an_unknown_joint_is_an_error():
    plan = dataclasses.replace(mannequin(), calibration={"symmetry": [["knee_l", "kne_r"]]})
    with pytest.raises(
        CalibrationError,
        match=r"calibration.symmetry: group .*names \['kne_r'\].*joints: pelvis",
    ):
        resolve(plan, size=body_size(plan))


def test_marker_with_dofs_is_an_error():
    plan = dataclasses.replace(mannequin(), calibration={"markers": ["knee_l"]})
    with pytest.raises(CalibrationError, match=r"'knee_l' is not a fixed non-root joint"):
        resolve(plan, size=1.0)


def test_unknown_calibration_key_is_an_error():
    plan = dataclasses.replace(mannequin(), calibration={"marker": ["nose"]})
    with pytest.raises(
        CalibrationError, match=r"unknown keys \['marker'\]; valid: \['global_scale'"
    ):
        resolve(plan, size=1.0)


def test_version_1_plan_with_calibration_field_is_rejected():
    data = {
        "fixed_base": True,
        "calibration": {},
        "joints": [
            {
                "name": "a",
                "parent": None,
                "offset_pos": [0, 0, 0],
                "offset_quat": [1, 0, 0, 0],
                "dofs": [],
            }
        ],
    }
    with pytest.raises(BodyPlanError, match=r"field 'calibration': is a version-2 field"):
        load_body_plan(data)


def test_left_right_pairs_share_one_scale():
    params = resolve(mannequin(), size=1.7)
    names = mannequin().joint_names
    group = dict(zip(names, params.joint_group, strict=True))
    assert group["knee_l"] == group["knee_r"] and group["knee_l"] != group["ankle_l"]
    assert group["pelvis"] == -1


def test_fly_prefix_pairs_share_one_scale(fly_plan_path):
    plan = load_body_plan(fly_plan_path)
    params = resolve(plan, size=3.5)
    group = dict(zip(plan.joint_names, params.joint_group, strict=True))
    assert group["lf_claw"] == group["rf_claw"] != group["lm_claw"]
    assert len(params.group_names) == 15


def test_two_individuals_need_a_choice(rng):
    template = mannequin()
    pos = np.zeros((60, 3, template.n_joints, 2), np.float32)
    tracks = make_tracks_dataset(
        pos,
        keypoints=template.joint_names,
        individuals=["a", "b"],
        fps=10.0,
        source_software="test",
    )
    with pytest.raises(CalibrationError, match=r"several individuals \(a, b\); choose one"):
        calibrate(template, tracks, QUICK)


def test_tracks_in_another_unit_are_an_error(rng):
    template = mannequin_template()
    session = render(template, rng, n_frames=60, unit="mm")
    with pytest.raises(CalibrationError, match=r"the tracks are in mm but the body plan in m"):
        calibrate(template, session.tracks, QUICK)
