"""The report draws each identity's template and calibrated body on one scale.

One real calibration of a synthetic subject (the mannequin scaled by 1.08 overall and up
to 15 % per symmetric group, markers moved 2-5 % of its size) is shared by the tests; one
of the fly (whose claw offsets have 16-17 significant digits) checks that the template
rebuilt from the record is the template bit for bit, and the archive report's section.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from matplotlib.collections import LineCollection

from pipeline.bodyplan import load_body_plan
from pipeline.bodyplan.io import body_plan_sha256, body_plan_to_dict
from pipeline.calibrate import CalibrationConfig, calibrate
from pipeline.calibrate.calibration_record import load_calibration
from pipeline.errors import CalibrationError
from pipeline.inspect.data.fit_archive import open_archive
from pipeline.inspect.plots.calibrated_bodies import (
    calibration_bodies,
    find_template,
    neutral_keypoints,
    plot_calibration_bodies,
    rebuild_template,
)
from pipeline.inspect.report.calibration_section import calibration_section, identity_html
from pipeline.inspect.report.pages import archive_report_html
from tests.unit.calibrate.subjects import fly_template, make_subject, mannequin_template, render

# make check skips it: calibrates and fits sessions
pytestmark = pytest.mark.slow

ALT = 'alt="template and calibrated body of mouse1"'
VERIFIED = "Template: rebuilt from the calibration record; its sha256 matches"
UNVERIFIED = "not a verified copy"


@pytest.fixture(scope="module")
def calibrated():
    rng = np.random.default_rng(16)
    template = mannequin_template()
    subject, _, _ = make_subject(template, rng)
    cal = calibrate(
        template,
        render(subject, rng, n_frames=200).tracks,
        CalibrationConfig(n_frames=150),
        identity="mouse1",
    )
    return template, cal


def _calibrate_fly(template, seed=17):
    rng = np.random.default_rng(seed)
    subject, _, _ = make_subject(template, rng, scale=0.95)
    tracks = render(subject, rng, n_frames=200, up="z", unit="mm").tracks
    return calibrate(template, tracks, CalibrationConfig(n_frames=150), identity="fly1")


def _long(values) -> bool:
    """Whether any value needs more than 12 significant digits."""
    return any(float(f"{v:.12g}") != v for v in values)


@pytest.fixture(scope="module")
def fly_calibrated(tmp_path_factory):
    # through a file, as a run loads its template (the helper's quaternions are ints)
    template = load_body_plan(body_plan_to_dict(fly_template()))
    stored = _calibrate_fly(template)
    cal = load_calibration(stored.save(tmp_path_factory.mktemp("fly") / "fly1.json"))
    return template, cal


def _old_style(cal):
    """The record as written before the template offsets were kept exactly."""
    segments = [
        {k: v for k, v in s.items() if k != "template_offset"} for s in cal.record["segments"]
    ]
    markers = [
        {**m, "template_offset": [float(f"{v:.12g}") for v in m["template_offset"]]}
        for m in cal.record["markers"]
    ]
    return cal.with_record(segments=segments, markers=markers)


def test_the_record_keeps_the_template_offsets_exactly(fly_calibrated):
    template, cal = fly_calibrated
    offsets = {j.name: list(j.offset_pos) for j in template.joints}
    kept = [*cal.record["segments"], *cal.record["markers"]]
    assert {k["joint"] for k in kept} >= {"lf_claw", "rh_claw", "lf_tibia_marker"}
    for k in kept:
        assert k["template_offset"] == offsets[k["joint"]]
    assert _long(v for k in kept for v in k["template_offset"])  # not 12-digit safe


def test_a_many_digit_template_is_rebuilt_bit_for_bit_and_verified(fly_calibrated):
    template, cal = fly_calibrated
    rebuilt, source = find_template(cal)
    assert source == "rebuilt from the calibration record; its sha256 matches the recorded one"
    assert body_plan_sha256(rebuilt) == cal.record["template_sha256"]
    assert body_plan_sha256(rebuilt) == body_plan_sha256(template)
    assert [j.offset_pos for j in rebuilt.joints] == [j.offset_pos for j in template.joints]
    text = identity_html(cal)
    assert 'alt="template and calibrated body of fly1"' in text and VERIFIED in text


def test_an_old_record_still_opens_and_is_honestly_unverified(fly_calibrated, calibrated):
    _, fly = fly_calibrated
    old = _old_style(fly)  # the claws' 17-digit offsets cannot come back from offset / scale
    _, source = find_template(old)
    assert source.startswith("rebuilt from the calibration record's template lengths")
    text = identity_html(old)
    assert 'alt="template and calibrated body of fly1"' in text and UNVERIFIED in text
    # a template of short decimals still verifies from an old record (the snapped path)
    template, mouse = calibrated
    rebuilt, source = find_template(_old_style(mouse))
    assert "sha256 matches" in source and body_plan_sha256(rebuilt) == body_plan_sha256(template)


def test_a_segment_offset_that_contradicts_the_calibrated_plan_is_refused(fly_calibrated):
    _, cal = fly_calibrated
    segments = [dict(s) for s in cal.record["segments"]]
    x, y, z = segments[0]["template_offset"]
    segments[0]["template_offset"] = [y, x, z]  # the same length, another direction
    with pytest.raises(CalibrationError, match="recorded template offset"):
        rebuild_template(cal.with_record(segments=segments))


def test_the_archive_report_checks_the_template_against_the_runs_plans(archive_copy, fly_plan_path):
    fly = load_body_plan(fly_plan_path)  # the plan the archive's fly session was fitted with
    _calibrate_fly(fly).save(archive_copy / "calibrations" / "fly1.json")
    archive = open_archive(archive_copy / "fits")
    text = archive_report_html(archive, detailed=0, observed=False)
    section = text[text.index('id="calibration"') :]
    assert 'alt="template and calibrated body of fly1"' in section
    assert (
        "Template: the plan stored with the fit lab_b/hop; its sha256 matches the recorded one"
        in section
    )
    given = dataclasses.replace(fly, source="given as the run template")
    text = archive_report_html(archive, detailed=0, observed=False, templates=[given])
    assert "Template: the plan given as the run template; its sha256 matches" in text


def test_section_draws_the_template_beside_the_calibrated_body(calibrated, tmp_path):
    _, cal = calibrated
    cal.save(tmp_path / "calibrations" / "mouse1.json")
    text = calibration_section(tmp_path / "calibrations")
    assert ALT in text and 'src="data:image/png;base64,' in text
    assert VERIFIED in text
    assert text.index(ALT) < text.index('alt="segment scales"')


def test_drawn_segment_lengths_are_the_template_lengths_times_the_scales(calibrated, tmp_path):
    template, stored = calibrated
    cal = load_calibration(stored.save(tmp_path / "mouse1.json"))  # as the report reads it
    rebuilt, source = find_template(cal)
    assert "sha256 matches" in source
    assert body_plan_sha256(rebuilt) == body_plan_sha256(template)
    bodies = calibration_bodies(cal, rebuilt, source)
    np.testing.assert_allclose(bodies.template, neutral_keypoints(template), atol=1e-12)
    parent = dict((b, a) for a, b in bodies.edges)
    index = {n: i for i, n in enumerate(bodies.names)}
    for s in cal.record["segments"]:
        j = index[s["joint"]]
        drawn = np.linalg.norm(bodies.calibrated[j] - bodies.calibrated[parent[j]])
        plain = np.linalg.norm(bodies.template[j] - bodies.template[parent[j]])
        assert plain == pytest.approx(s["template_length"], rel=1e-9)
        assert drawn / plain == pytest.approx(s["scale"], rel=1e-9)
    scales = [s["scale"] for s in cal.record["segments"]]
    assert np.ptp(scales) > 0.1  # the subject is not the template uniformly scaled
    assert {bodies.names[m] for m in bodies.markers} == {
        "thumb_l",
        "thumb_r",
        "heel_l",
        "heel_r",
    }
    fig = plot_calibration_bodies(bodies, title="mouse1", unit="m")
    front = fig.axes[0]
    assert front.get_aspect() == 1.0
    lines = {c.get_label(): c for c in front.collections if isinstance(c, LineCollection)}
    h, v = 0, 1  # the mannequin is tallest along y: the first panel is the x-y plane
    for which in ("template", "calibrated"):
        points = getattr(bodies, which)
        bones = [(a, b) for a, b in bodies.edges if b not in bodies.markers]
        want = np.array([(points[a, [h, v]], points[b, [h, v]]) for a, b in bones])
        np.testing.assert_allclose(np.array(lines[which].get_segments()), want)
        assert len(lines[f"{which} marker offsets"].get_segments()) == 4


def test_a_given_template_is_used_and_a_wrong_one_is_not(calibrated):
    template, cal = calibrated
    _, source = find_template(cal, [template])
    assert source == "the plan pipeline.bodyplan.mannequin; its sha256 matches the recorded one"
    other = dataclasses.replace(template, calibration=None)
    _, source = find_template(cal, [other])
    assert source.startswith("rebuilt from the calibration record")


def test_an_unverifiable_template_is_drawn_and_said_to_be_unverified(calibrated):
    _, cal = calibrated
    markers = [dict(m) for m in cal.record["markers"]]
    markers[0]["template_offset"] = [v * 1.0001 for v in markers[0]["template_offset"]]
    text = identity_html(cal.with_record(markers=markers))
    assert ALT in text and "not a verified copy" in text


def test_a_record_that_cannot_rebuild_the_template_gets_a_note(calibrated):
    _, cal = calibrated
    segments = [dict(s) for s in cal.record["segments"]]
    segments[0]["template_length"] *= 2
    broken = cal.with_record(segments=segments)
    with pytest.raises(CalibrationError, match="recorded template length"):
        rebuild_template(broken)
    text = identity_html(broken)
    assert ALT not in text
    assert "Template and calibrated body not drawn" in text
    assert "recorded template length" in text
    assert 'alt="segment scales"' in text  # the rest of the section is still there
