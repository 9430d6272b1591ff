"""Single-view 2D sessions: a real top-down DeepLabCut file fitted on the image plane.

``m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.h5`` (DeepLabCut/DLC2NWB, MIT; 2330
frames of a mouse in an open field, snout, ears and tail base) is fitted with the planar
``configs/bodyplans/mouse_topdown.json`` (pixels, the head yaws about z) through
``XYView``: the depth and the out-of-plane root rotations are flagged unobservable and
stay where the prior puts them; the fit's pixel errors are printed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.fit import fit_session
from pipeline.fit.view_setup import ViewSetup, observability
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.tracks import read_tracks
from tests.fixtures.multiview_rig import mannequin_rig
from tests.fixtures.shared_data import SHARED

ROOT = Path(__file__).resolve().parents[3]
DLC = SHARED / "data" / "realdata" / "dlc" / "m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.h5"
PLAN = ROOT / "configs" / "bodyplans" / "mouse_topdown.json"


@pytest.fixture(scope="module")
def fit(tmp_path_factory):
    if not DLC.exists():
        pytest.skip(f"{DLC}: the shared real data is not here")
    folder = tmp_path_factory.mktemp("mouse")
    ds = read_tracks(DLC, fps=30).isel(time=slice(0, 600))
    tracks = write_tracks(ds, folder / "m.zarr", chunk_frames=300)
    config = SolverConfig(loss="cauchy", loss_scale=5.0)
    report = fit_session(tracks, load_body_plan(PLAN), config, folder / "fit.zarr")
    assert report.n_chunks == 2
    return open_fit(report.out).load()


def test_real_top_down_mouse_fits_on_the_image_plane(fit, record_property):
    error = fit["reprojection_error"].values[:, 0, :, 0]  # (time, keypoint)
    names = list(fit["keypoint"].values)
    medians = {}
    for k, name in enumerate(names):
        if np.isfinite(error[:, k]).any():
            medians[name] = float(np.nanmedian(error[:, k]))
            p95 = float(np.nanpercentile(error[:, k], 95))
            print(f"mouse {name}: median {medians[name]:.2f} px, p95 {p95:.2f} px")
            record_property(f"mouse_{name}_median_px", medians[name])
    assert set(medians) == {"snout", "leftear", "rightear", "tailbase"}
    # four keypoints, a head yaw and a body stretch: a few pixels
    assert max(medians.values()) < 5.0 and min(medians.values()) < 3.0
    assert fit["converged"].values.mean() > 0.95
    assert fit.attrs["observation"]["kind"] == "image"


def test_one_view_flags_depth_and_tilt_unobservable_and_holds_them(fit):
    assert fit.attrs["unobservable"] == [
        "root_position/z",
        "root_rotation/x",
        "root_rotation/y",
    ]
    assert fit.attrs["view_observable"]["head/0"] is True
    assert fit.attrs["view_observable"]["spine/0"] is True
    np.testing.assert_allclose(fit["root_position"].values[..., 2], 0.0, atol=1e-9)
    quat = fit["root_orientation"].values[:, 0]  # w, x, y, z: a turn about z only
    np.testing.assert_allclose(quat[:, 1:3], 0.0, atol=1e-9)
    yaw = np.degrees(fit["dof_value"].sel(dof="head/0").values[:, 0])
    print(f"head yaw 5-50-95 %: {np.percentile(yaw, [5, 50, 95]).round(1)} deg")


def test_several_cameras_observe_everything_one_camera_not_its_depth():
    plan = load_body_plan(PLAN)
    cams = tuple(mannequin_rig(2))
    both = dict(observability(plan, ViewSetup("cameras", ("a", "b"), cams)))
    assert all(both.values())
    one = dict(observability(plan, ViewSetup("cameras", ("a",), cams[:1])))
    # the plan's plane is tilted against the camera: only the depth is lost
    assert [n for n, ok in one.items() if not ok] == ["root_position/camera_z"]
