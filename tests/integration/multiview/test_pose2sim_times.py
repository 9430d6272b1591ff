"""Pose2Sim's demo read as a Pose2Sim project: a fit's exports carry Pose2Sim's times.

Pose2Sim's ``.trc`` of the demo numbers the JSON's frame ``k`` as ``Frame# k + 1`` at
``Time (k + 1) / 60`` and its ``.mot`` (OpenSim's IK of that ``.trc``) keeps those times.
The 4 cameras' OpenPose JSON ingested with the project's ``Config.toml``, frames 10 to 12
fitted through the cameras: the ``.mot`` and ``.trc`` rows carry, row by row, the times the
published files give the same frames. The model's pelvis, knees and spine translate
(slide DOFs): its BVH export, read back by bvhio, puts every joint where the fit did.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.archive.view_files import read_views
from pipeline.bodyplan import load_body_plan
from pipeline.config.pose2sim_project import pose2sim_reader_options
from pipeline.export.exporter_registry import export
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from tests.fixtures.shared_data import SHARED

pytestmark = pytest.mark.slow

DEMO = SHARED / "data" / "pose2sim"
MODEL = DEMO / "opensim" / "Model_Pose2Sim_body25b_scaled.osim"
TRC = DEMO / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100_filt_butterworth.trc"
MOT = DEMO / "opensim" / "S00_P00_T01_BalancingTrial_filt_butterworth_0-100_body25b.mot"
VIEWS = [DEMO / "pose" / f"cam0{i}_json" for i in range(1, 5)]
FRAMES = slice(10, 13)


def _table(path: Path, header: str) -> np.ndarray:
    """The numeric rows after the line that starts with ``header``."""
    lines = path.read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 1
    rows = [line.split("\t") for line in lines[start:] if line.strip()]
    return np.array([[float(v) for v in row if v.strip()] for row in rows])


def _read(**options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the skipped *.json.old files
        return read_views(VIEWS, DEMO / "Calib.toml", **options)


@pytest.fixture(scope="module")
def fit(tmp_path_factory) -> Path:
    for path in (MODEL, TRC, MOT, DEMO / "Config.toml"):
        if not path.is_file():
            pytest.skip(f"{path}: the shared Pose2Sim demo is not here")
    folder = tmp_path_factory.mktemp("p2s_times")
    options = pose2sim_reader_options(DEMO / "Config.toml")
    tracks = write_tracks(_read(**options).isel(time=FRAMES), folder / "t.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keypoints the model lacks, unobservable DOFs
        fit_session(tracks, load_body_plan(MODEL), SolverConfig(n_iterations=20), folder / "f")
    return folder / "f"


def test_the_mot_of_a_fit_of_the_json_has_pose2sim_s_times(fit: Path) -> None:
    out = fit.parent / "f.mot"
    export("mot", fit, out)
    ours = _table(out, "time")[:, 0]
    np.testing.assert_allclose(ours, _table(MOT, "time")[FRAMES, 0], atol=1e-6)  # 8 digits
    np.testing.assert_allclose(ours, _table(TRC, "\t\tX1")[FRAMES, 1], atol=1e-9)


def test_the_trc_of_a_fit_of_the_json_has_pose2sim_s_times(fit: Path) -> None:
    out = fit.parent / "f.trc"
    export("trc", fit, out, keypoints="fitted")
    ours = _table(out, "\t\tX1")[:, 1]
    np.testing.assert_allclose(ours, _table(TRC, "\t\tX1")[FRAMES, 1], atol=1e-9)


def test_plain_openpose_ingest_keeps_its_own_clock_and_says_so() -> None:
    ds = _read(fps=60)  # no Pose2Sim config: the first JSON file is 0 s
    np.testing.assert_allclose(ds["time"].values[:3], np.arange(3) / 60)
    assert ds.attrs["time_origin"] == "frames"
    p2s = _read(fps=60, time_origin="pose2sim", frame_range=(30, 33))
    np.testing.assert_allclose(p2s["time"].values, np.arange(1, 4) / 60)
    assert p2s.attrs["time_origin"] == "pose2sim"


def test_the_bvh_of_the_fit_with_its_slides_reads_back_where_the_fit_put_every_joint(
    fit: Path,
) -> None:
    import bvhio
    import xarray as xr

    from pipeline.export.common import fit_plan

    store = xr.open_zarr(fit)
    plan = fit_plan(store)
    out = export("bvh", fit, fit.parent / "f.bvh").files[0]
    root = bvhio.readAsHierarchy(str(out))
    joints = {joint.Name: joint for joint, *_ in root.layout()}
    want = store["fitted_position"].isel(individual=0).transpose("time", "keypoint", "space")
    for f in range(store.sizes["time"]):
        root.loadPose(f)
        got = np.array([list(joints[name].PositionWorld) for name in plan.joint_names])
        np.testing.assert_allclose(got, want.values[f], atol=1e-6)  # metres
