"""Exported times are the source frames' times: Pose2Sim's ``.trc`` in, ``.mot``/``.trc`` out.

Pose2Sim's demo trial: its filtered ``.trc`` (60 fps, ``Frame# 1`` at ``Time
0.01666667``) fitted with its scaled model, frames 10 to 14. The ``.mot`` and ``.trc``
kinefit writes carry, row by row, the time of the source frame the row fits, which is the
time Pose2Sim's own ``.mot`` (OpenSim's IK of the same ``.trc``) gives that frame.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.export.exporter_registry import export
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.tracks import read_tracks
from tests.fixtures.shared_data import SHARED

pytestmark = pytest.mark.slow

DEMO = SHARED / "data" / "pose2sim"
TRC = DEMO / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100_filt_butterworth.trc"
MODEL = DEMO / "opensim" / "Model_Pose2Sim_body25b_scaled.osim"
MOT = DEMO / "opensim" / "S00_P00_T01_BalancingTrial_filt_butterworth_0-100_body25b.mot"
FRAMES = slice(10, 15)


def _table(path, header: str) -> np.ndarray:
    """The numeric rows after the line that starts with ``header``."""
    lines = path.read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 1
    rows = [line.split("\t") for line in lines[start:] if line.strip()]
    return np.array([[float(v) for v in row if v.strip()] for row in rows])


@pytest.fixture(scope="module")
def fit(tmp_path_factory):
    for path in (TRC, MODEL, MOT):
        if not path.is_file():
            pytest.skip(f"{path}: the shared Pose2Sim demo is not here")
    folder = tmp_path_factory.mktemp("times")
    tracks = write_tracks(read_tracks(TRC).isel(time=FRAMES), folder / "t.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # markers the model lacks, unobservable DOFs
        plan = load_body_plan(MODEL)
        fit_session(tracks, plan, SolverConfig(n_iterations=30), folder / "f.zarr")
    return folder / "f.zarr"


def test_mot_rows_carry_the_source_frames_times_as_pose2sim_s_mot_does(fit):
    out = fit.parent / "f.mot"
    export("mot", fit, out)
    ours = _table(out, "time")[:, 0]
    source = _table(TRC, "\t\tX1")[FRAMES, 1]  # the .trc's Time column
    pose2sim = _table(MOT, "time")[FRAMES, 0]
    np.testing.assert_allclose(ours, source, atol=1e-9)
    np.testing.assert_allclose(ours, pose2sim, atol=1e-6)  # printed to 8 digits
    assert ours[0] == pytest.approx(11 / 60)  # Frame# 11 of the source


def test_trc_rows_carry_the_source_frames_times(fit):
    out = fit.parent / "f.trc"
    export("trc", fit, out, keypoints="fitted")
    ours = _table(out, "\t\tX1")[:, 1]
    np.testing.assert_allclose(ours, _table(TRC, "\t\tX1")[FRAMES, 1], atol=1e-9)
