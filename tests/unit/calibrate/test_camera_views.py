"""Calibration through calibrated cameras: segment scales from the pixels of several views.

A synthetic subject (the mannequin with every side-symmetric segment group scaled by up
to 15 % and its thumbs and heels displaced as markers) is rendered through a four-camera
rig (radtan lenses, one fisheye; 1 px noise, occlusion runs, keypoints only one camera
sees) and calibrated from the pixels alone, the cameras held fixed. The truth is the
subject's plan, built outside the calibration from known parameters.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from pipeline.bodyplan import save_body_plan
from pipeline.calibrate import CalibrationConfig, calibrate, load_calibration
from pipeline.errors import CalibrationError
from pipeline.inspect.report.calibration_section import identity_html
from pipeline.store import write_tracks
from pipeline.synth.camera_views import ViewsConfig, render_views
from pipeline.tracks.multiview import make_multiview_dataset
from tests.fixtures.multiview_rig import fly_rig, mannequin_rig
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render

FRAMES = CalibrationConfig(n_frames=120, min_frames=20)


@pytest.fixture(scope="module")
def subject_views():
    """Template, the subject's true plan and parameters, its rig session (dataset)."""
    rng = np.random.default_rng(7)
    template = mannequin_template()
    subject, theta, params = make_subject(template, rng)
    session = render(subject, rng, n_frames=160)
    points = session.truth["position"].values[..., 0].transpose(0, 2, 1)  # (T, J, 3)
    cameras = mannequin_rig(4)
    views = ViewsConfig(noise_px=1.0, outliers=0.0)
    pixels, conf = render_views(points, cameras, views, rng)  # (T, C, J, 2), (T, C, J)
    ds = make_multiview_dataset(
        pixels.transpose(0, 1, 3, 2)[..., None],
        conf[..., None],
        cameras=cameras,
        keypoints=template.joint_names,
        individuals=["subject"],
        fps=100.0,
        session="rig",
    )
    return template, subject, theta, params, ds


@pytest.fixture(scope="module")
def calibrated(subject_views):
    template, *_, ds = subject_views
    return calibrate(template, ds, FRAMES)


def _segments(template, params):
    return [
        i
        for i, j in enumerate(template.joints)
        if j.parent is not None and any(j.offset_pos) and i not in params.markers
    ]


def test_segment_scales_recovered_through_the_cameras(subject_views, calibrated):
    template, subject, theta, params, _ = subject_views
    cal = calibrated
    lengths = np.linalg.norm([j.offset_pos for j in cal.plan.joints], axis=1)
    true = np.linalg.norm([j.offset_pos for j in subject.joints], axis=1)
    seg = _segments(template, params)
    error = np.abs(lengths[seg] / true[seg] - 1)
    truth_scales = true[seg] / np.linalg.norm([template.joints[i].offset_pos for i in seg], axis=1)
    assert np.ptp(truth_scales) > 0.15  # the subject's proportions are not the template's
    assert np.median(error) < 0.005, error
    assert error.max() < 0.015, error
    assert abs(cal.global_scale / theta[0] - 1) < 0.01
    moved = []  # marker offsets: the calibration moves each marker toward its true place
    for m in params.markers:
        delta = np.subtract(
            subject.joints[m].offset_pos, np.multiply(theta[0], template.joints[m].offset_pos)
        )
        err = np.subtract(cal.plan.joints[m].offset_pos, subject.joints[m].offset_pos)
        moved.append(np.linalg.norm(err) / np.linalg.norm(delta))
    assert max(moved) < 0.5 and np.median(moved) < 0.3, moved
    rec = cal.record
    assert rec["observation"] == "cameras" and rec["residual_unit"] == "px"
    assert rec["cameras"] == [c.name for c in mannequin_rig(4)]
    assert rec["converged"] and cal.rms_after < cal.rms_before / 3
    assert cal.rms_after < 2.0  # px: the 1 px noise, not a body that is off
    scales = {s["joint"]: s for s in rec["segments"]}
    assert all(s["observed"] and 0 < s["scale_std"] < 0.05 for s in scales.values())
    html = identity_html(cal)  # the report says what the residuals are
    assert "reprojection RMS, calibrated" in html and f"{cal.rms_after:.4g} px" in html


@pytest.mark.slow
def test_sessions_from_two_rigs_calibrate_together(subject_views):
    """A second session seen by other cameras: the views of both rigs side by side."""
    template, subject, _, params, ds = subject_views
    first = ds.isel(time=slice(0, 60))
    other = mannequin_rig(3)
    other = [dataclasses.replace(c, name=f"b{c.name}") for c in other]
    rng = np.random.default_rng(3)
    session = render(subject, rng, n_frames=60, session="second")
    points = session.truth["position"].values[..., 0].transpose(0, 2, 1)
    pixels, conf = render_views(points, other, ViewsConfig(noise_px=1.0, outliers=0.0), rng)
    second = make_multiview_dataset(
        pixels.transpose(0, 1, 3, 2)[..., None],
        conf[..., None],
        cameras=other,
        keypoints=template.joint_names,
        individuals=["subject"],
        session="second",
    )
    cal = calibrate(template, [first, second], CalibrationConfig(n_frames=60, min_frames=20))
    assert len(cal.record["cameras"]) == 7
    assert {s["name"] for s in cal.record["sessions"]} == {"rig", "second"}
    lengths = np.linalg.norm([j.offset_pos for j in cal.plan.joints], axis=1)
    true = np.linalg.norm([j.offset_pos for j in subject.joints], axis=1)
    seg = _segments(template, params)
    assert np.median(np.abs(lengths[seg] / true[seg] - 1)) < 0.01


def test_cli_calibrates_a_multiview_store(subject_views, tmp_path):
    template, subject, _, params, ds = subject_views
    store = write_tracks(ds.isel(time=slice(0, 60)), tmp_path / "rig.zarr")
    plan = save_body_plan(template, tmp_path / "template.json")
    out = tmp_path / "subject.json"
    args = ["calibrate", str(store), "-b", str(plan), "-o", str(out), "--frames", "40"]
    result = CliRunner().invoke(app, [*args, "--min-frames", "20"])
    assert result.exit_code == 0, result.output
    assert "px" in result.output and "through 4 cameras" in result.output
    cal = load_calibration(out)
    seg = _segments(template, params)
    lengths = np.linalg.norm([j.offset_pos for j in cal.plan.joints], axis=1)
    true = np.linalg.norm([j.offset_pos for j in subject.joints], axis=1)
    assert np.median(np.abs(lengths[seg] / true[seg] - 1)) < 0.02


def test_two_d_tracks_without_cameras_are_refused(subject_views):
    template, *_, ds = subject_views
    plain = ds.isel(view=0).drop_vars("view")
    plain.attrs = {k: v for k, v in ds.attrs.items() if k not in ("cameras", "frame_offset")}
    with pytest.raises(CalibrationError, match="2-D tracks without cameras.*--calibration"):
        calibrate(template, plain, FRAMES)


def test_a_view_without_its_camera_is_refused(subject_views):
    template, *_, ds = subject_views
    broken = ds.copy()
    broken.attrs = {**ds.attrs, "cameras": ds.attrs["cameras"][:3]}
    with pytest.raises(CalibrationError, match=r"views \['camD'\] have no camera"):
        calibrate(template, broken, FRAMES)
    gone = ds.copy()
    gone.attrs = {k: v for k, v in ds.attrs.items() if k != "cameras"}
    with pytest.raises(CalibrationError, match="attrs.cameras: missing.*calibrated cameras"):
        calibrate(template, gone, FRAMES)


def test_cameras_in_another_unit_and_mixed_sessions_are_refused(subject_views):
    template, subject, *_, ds = subject_views
    mm = ds.copy()
    mm.attrs = {**ds.attrs, "cameras": [c.to_dict() for c in fly_rig(4)]}
    with pytest.raises(CalibrationError, match="extrinsics are in 'mm' but the body plan"):
        calibrate(template, mm, FRAMES)
    three_d = render(subject, np.random.default_rng(1), n_frames=40).tracks
    with pytest.raises(CalibrationError, match="mix 3-D tracks and 2-D camera views"):
        calibrate(template, [ds, three_d], FRAMES)


def test_one_camera_is_refused(subject_views):
    template, *_, ds = subject_views
    one = ds.isel(view=[0])
    one.attrs = {**ds.attrs, "cameras": ds.attrs["cameras"][:1], "frame_offset": [0]}
    with pytest.raises(CalibrationError, match="rig: one camera: .*two or more views"):
        calibrate(template, one, FRAMES)


def test_cli_refuses_a_plain_2d_store_and_writes_nothing(subject_views, tmp_path):
    template, *_, ds = subject_views
    plain = ds.isel(view=0).drop_vars("view")
    plain.attrs = {k: v for k, v in ds.attrs.items() if k not in ("cameras", "frame_offset")}
    store = write_tracks(plain.isel(time=slice(0, 30)), tmp_path / "plain.zarr")
    plan = save_body_plan(template, tmp_path / "template.json")
    out = tmp_path / "subject.json"
    result = CliRunner().invoke(app, ["calibrate", str(store), "-b", str(plan), "-o", str(out)])
    assert result.exit_code == 1
    assert "2-D tracks without cameras" in result.output and not out.exists()
