"""Pose2Sim's demo fitted through its 4 cameras with the README's commands as printed.

``kinefit ingest --views ... --pose2sim-config`` then ``kinefit fit -b <scaled model> --set
ik_setup=<its IK setup>`` with the default solver. Held against the issue's bars that this
fit meets: at least 99 % of the frames stop converged under the default iteration cap (the
subtalar coordinates rest on their limits, where the held-at-limit step of
:mod:`pipeline.solve.rules` converges; before it a fifth of the frames crept to the cap),
the median over the coordinates of the RMS difference from Pose2Sim's published
``.mot`` is within 3 degrees, and the fitted keypoints (the ``.trc`` kinefit exports) are
within 30 mm median of Pose2Sim's filtered ``.trc``. Every fitted coordinate stays inside
its range.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from flows.cli import app
from pipeline.bodyplan.importers.osim import import_osim
from pipeline.tracks.opensim_storage import read_storage
from pipeline.tracks.readers import trc
from tests.fixtures.shared_data import SHARED

pytestmark = pytest.mark.slow

DEMO = SHARED / "data" / "pose2sim"
OPENSIM = DEMO / "opensim"
MODEL = OPENSIM / "Model_Pose2Sim_body25b_scaled.osim"
SETUP = OPENSIM / "IK_Setup_Pose2Sim_Body25b.xml"
MOT = OPENSIM / "S00_P00_T01_BalancingTrial_filt_butterworth_0-100_body25b.mot"
TRC = DEMO / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100_filt_butterworth.trc"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    for path in (MODEL, SETUP, MOT, DEMO / "Config.toml", DEMO / "Calib.toml"):
        if not path.is_file():
            pytest.skip(f"{path}: the shared Pose2Sim demo is not here")
    tmp = tmp_path_factory.mktemp("p2s_direct")
    views = [str(DEMO / "pose" / f"cam0{i}_json") for i in range(1, 5)]
    runner = CliRunner()
    run = runner.invoke(
        app,
        ["ingest", "--views", *views, "--calibration", str(DEMO / "Calib.toml"),
         "--pose2sim-config", str(DEMO / "Config.toml"), "-o", str(tmp / "trial.zarr")],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    run = runner.invoke(
        app,
        ["fit", str(tmp / "trial.zarr"), "-b", str(MODEL), "-o", str(tmp / "fit.zarr"),
         "--set", f"ik_setup={SETUP}", "--workers", "0"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    run = runner.invoke(app, ["export", "mot", str(tmp / "fit.zarr"), "-o", str(tmp / "fit.mot")])
    assert run.exit_code == 0, run.output
    return tmp


def test_the_frames_converge_under_the_default_cap(fitted: Path) -> None:
    fit = xr.open_zarr(fitted / "fit.zarr")
    reason = fit["stop_reason"].values.ravel()
    assert reason.size == 100
    assert np.mean(reason == 0) >= 0.99, np.bincount(reason)
    assert fit["iterations"].values.max() < 100


def test_the_angles_are_near_pose2sim_s_and_inside_their_ranges(fitted: Path) -> None:
    mine, ref = read_storage(fitted / "fit.mot"), read_storage(MOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = import_osim(MODEL)
    rms = {}
    for c in (str(c) for c in ref["coordinate"].values):
        if c.startswith("pelvis_t"):  # translations (m): not angles
            continue
        x = mine["value"].sel(coordinate=c).values
        d = (x - ref["value"].sel(coordinate=c).values[: x.size] + 180) % 360 - 180
        rms[c] = float(np.sqrt(np.mean(d * d)))
    assert np.median(list(rms.values())) <= 3.0, sorted(rms.items(), key=lambda kv: kv[1])
    fit = xr.open_zarr(fitted / "fit.zarr")
    q = fit["dof_value"].isel(individual=0).values
    lower, upper = np.asarray(plan.lower), np.asarray(plan.upper)  # +-inf: no limit
    assert np.isfinite(lower).sum() > 20  # the spine's, the arms' and the legs' ranges
    inside = (q >= lower - 1e-6) & (q <= upper + 1e-6)  # the store's float32
    assert inside.all(), [str(n) for n in fit["dof"].values[~inside.all(axis=0)]]


def test_the_fitted_keypoints_are_near_pose2sim_s_triangulated_ones(fitted: Path) -> None:
    """Same frames, same (Y-up, metre) frame: the exported ``.trc`` against Pose2Sim's."""
    run = CliRunner().invoke(
        app, ["export", "trc", str(fitted / "fit.zarr"), "-o", str(fitted / "fit.trc")]
    )
    assert run.exit_code == 0, run.output
    mine, ref = trc.read(fitted / "fit.trc"), trc.read(TRC)
    np.testing.assert_allclose(mine["time"].values, ref["time"].values, atol=1e-9)
    names = [k for k in ref["keypoint"].values if k in mine["keypoint"].values]
    assert len(names) == 21  # every keypoint of Pose2Sim's .trc

    def xyz(ds):
        sel = ds["position"].sel(keypoint=names).isel(individual=0)
        return sel.transpose("time", "keypoint", "space").values

    distance = np.linalg.norm(xyz(mine) - xyz(ref), axis=-1)
    assert np.isfinite(distance).all()
    assert np.median(distance) <= 0.030, np.median(distance)
