"""The report's calibration section shows every stored identity."""

from __future__ import annotations

from pipeline.calibrate import CalibrationConfig, calibrate
from pipeline.inspect.report.calibration_section import calibration_section
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render


def test_section_lists_identities_with_scales_and_residuals(tmp_path, rng):
    assert calibration_section(tmp_path / "none") == ""
    template = mannequin_template()
    subject, _, _ = make_subject(template, rng)
    cal = calibrate(
        template,
        render(subject, rng, n_frames=200).tracks,
        CalibrationConfig(n_frames=150),
        identity="mouse1",
    )
    cal.with_record(flagged=["day9"]).save(tmp_path / "calibrations" / "mouse1.json")
    (tmp_path / "calibrations" / "broken.json").write_text("{}")
    text = calibration_section(tmp_path / "calibrations")
    assert 'id="calibration-mouse1"' in text and "Segment scales." in text
    assert "keypoint RMS, template" in text and "knee_l" in text
    assert "day9" in text and "broken.json: not shown" in text
