"""A calibrated plan is used only with the template it was calibrated from."""

from __future__ import annotations

import pytest

from pipeline.bodyplan import body_plan_sha256, mannequin
from pipeline.bodyplan.editing import without_limits
from pipeline.calibrate import Calibration, calibrated_plan
from pipeline.calibrate.calibration_record import FORMAT
from pipeline.errors import CalibrationError


@pytest.fixture
def saved(tmp_path):
    """A calibration file whose record names the mannequin as its template."""
    template = mannequin()
    record = {"format": FORMAT, "template_sha256": body_plan_sha256(template)}
    cal = Calibration(template, {}).with_record(**record)
    return cal.save(tmp_path / "calibrated.json"), template


def test_the_plan_loads_alone_or_with_its_own_template(saved):
    path, template = saved
    alone = calibrated_plan(path)
    assert alone.joint_names == template.joint_names
    assert calibrated_plan(path, template).joint_names == template.joint_names


def test_another_template_is_refused_with_both_digests(saved):
    path, template = saved
    other = without_limits(template)
    sha = body_plan_sha256(other)
    assert sha != body_plan_sha256(template)
    with pytest.raises(CalibrationError) as info:
        calibrated_plan(path, other, "--body-plan other.json")
    text = str(info.value)
    assert text.startswith(f"{path}: was calibrated from another template than --body-plan")
    assert body_plan_sha256(template)[:12] in text and sha[:12] in text


def test_a_plain_body_plan_is_not_a_calibration(tmp_path):
    from pipeline.bodyplan import save_body_plan

    path = tmp_path / "plain.json"
    save_body_plan(mannequin(), path)
    with pytest.raises(CalibrationError, match="not a kinefit calibration"):
        calibrated_plan(path, mannequin())
