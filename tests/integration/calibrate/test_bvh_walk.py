"""A real recording: the PyMO BVH walk's joint centres fitted onto the mannequin.

The motion is real motion capture (``../shared/data/realdata/bvh/``, see PROVENANCE.md);
the mannequin is a generic body. Calibration must at least halve the keypoint RMS of the
fit (measured: 39.4 mm with the template, 11.9 mm after calibration).
"""

from __future__ import annotations

import warnings

import numpy as np

from pipeline.bodyplan import mannequin
from pipeline.calibrate import calibrate, session_targets
from pipeline.solve import solve_sequence
from pipeline.tracks import read_tracks
from pipeline.tracks.mapping import UnmappedKeypointWarning
from tests.fixtures.shared_data import ROOT, SHARED

WALK = SHARED / "data" / "realdata" / "bvh" / "AV_8Walk_Meredith_HVHA_Rep1.bvh"
MAP = ROOT / "configs" / "keypoint_maps" / "bvh_walk_to_mannequin.yaml"


def test_calibration_halves_the_bvh_walk_keypoint_rms():
    tracks = read_tracks(WALK, unit="in", to_unit="m")
    plan = mannequin()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmappedKeypointWarning)  # thumbs, End Sites
        cal = calibrate(plan, tracks, keypoint_map=MAP)
        session = session_targets(plan, tracks, keypoint_map=MAP)
    rms = {}
    for name, body in (("template", plan), ("calibrated", cal.plan)):
        fit = solve_sequence(body, session.targets, session.weights)
        rms[name] = float(np.nanmean(fit.rms_error))
    print(
        f"BVH walk keypoint RMS: template {rms['template'] * 1000:.1f} mm, "
        f"calibrated {rms['calibrated'] * 1000:.1f} mm"
    )
    assert rms["calibrated"] <= 0.5 * rms["template"], rms
    assert cal.rms_after <= 0.5 * cal.rms_before
    segments = {s["joint"]: s for s in cal.record["segments"]}
    assert not segments["heel_l"]["observed"]  # nothing tracked there: template proportion
