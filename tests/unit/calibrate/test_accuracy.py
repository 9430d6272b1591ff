"""Calibration recovers a synthetic subject's body: lengths, markers, and the fit it gives."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.calibrate import calibrate
from pipeline.solve import solve_sequence
from tests.unit.calibrate.subjects import (
    fly_template,
    make_subject,
    mannequin_template,
    render,
    rotation_errors,
    targets_of,
)


def _check(template, subject, theta, params, session, cal):
    lengths = np.linalg.norm([j.offset_pos for j in cal.plan.joints], axis=1)
    true = np.linalg.norm([j.offset_pos for j in subject.joints], axis=1)
    segment = [
        i
        for i, j in enumerate(template.joints)
        if j.parent is not None and any(j.offset_pos) and i not in params.markers
    ]
    worst = np.max(np.abs(lengths[segment] / true[segment] - 1))
    assert worst < 0.02, f"segment length off by {worst:.2%}"
    for m in params.markers:
        delta = np.subtract(
            subject.joints[m].offset_pos, np.multiply(theta[0], template.joints[m].offset_pos)
        )
        err = np.linalg.norm(
            np.subtract(cal.plan.joints[m].offset_pos, subject.joints[m].offset_pos)
        )
        assert err < 0.1 * np.linalg.norm(delta), (template.joint_names[m], err, delta)
    targets, conf = targets_of(session)
    errs = {}
    for name, plan in (("true", subject), ("calibrated", cal.plan)):
        fit = solve_sequence(plan, targets, conf)
        e = rotation_errors(subject, session.truth, fit)
        errs[name] = (np.median(e), np.percentile(e, 95))
    assert errs["calibrated"][0] <= 1.25 * errs["true"][0], errs
    assert errs["calibrated"][1] <= 1.25 * errs["true"][1], errs
    assert cal.rms_after < cal.rms_before / 3
    return errs


@pytest.mark.slow
def test_mannequin_subject_lengths_markers_and_angles(rng):
    template = mannequin_template()
    subject, theta, params = make_subject(template, rng)
    session = render(subject, rng)
    cal = calibrate(template, session.tracks)
    assert cal.record["converged"]
    _check(template, subject, theta, params, session, cal)


@pytest.mark.slow
def test_fly_subject_lengths_markers_and_angles(rng):
    template = fly_template()
    subject, theta, params = make_subject(template, rng, scale=0.95)
    session = render(subject, rng, up="z", unit="mm")
    cal = calibrate(template, session.tracks)
    _check(template, subject, theta, params, session, cal)
