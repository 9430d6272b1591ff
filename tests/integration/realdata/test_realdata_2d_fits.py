"""Every real 2-D tracks file, fitted: report, notebook views and every export run.

Each 2-D file of ``../shared/data/realdata`` that ingests (DeepLabCut, LightningPose,
SLEAP analysis HDF5 and ``.slp``, NWB, movement netCDF) is fitted on 20 frames with the
shipped ``mouse_topdown`` plan: its keypoints by name where ``body-plan map`` finds them,
else the file's first keypoints onto the plan's four observed joints (a mapped plan; the
fit's quality is not this test's subject). Then the session report, the notebook's
views and every exporter run on the fit. What one view cannot measure (depth, the tilts
out of the image) is said: in the report, on the figures and as a warning of every
export (BVH too: the plan's slides are position channels). An exporter that does not apply
to the plan (``.mot`` needs an OpenSim model, ``qpos`` an MJCF/URDF one) refuses with one
clear error, writing nothing.
Kimodo's export needs a Kimodo skeleton file and is not automatic: not run here.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.bodyplan.keypoint_map import propose_keypoint_map
from pipeline.errors import ExportError
from pipeline.export.exporter_registry import AUTOMATIC_EXPORTS, export, get_exporter
from pipeline.export.observability import ExportWarning
from pipeline.fit import fit_session
from pipeline.inspect import (
    joint_dofs,
    open_observed,
    plot_dof_trajectories,
    plot_residual_heatmap,
    plot_skeleton_frame,
    view,
)
from pipeline.inspect.report.pages import write_session_report
from pipeline.solve import SolverConfig
from pipeline.store import open_tracks, write_tracks
from pipeline.store.fit import open_fit
from pipeline.tracks import read_tracks
from tests.fixtures.shared_data import ROOT, SHARED

matplotlib.use("agg")

pytestmark = pytest.mark.slow  # 10-45 s a file at load average 20 on 2 cores

REALDATA = SHARED / "data" / "realdata"
PLAN = ROOT / "configs" / "bodyplans" / "mouse_topdown.json"
OBSERVED_JOINTS = ("snout", "leftear", "rightear", "tailbase")
#: Formats that record their frame rate; 30 fps is passed to the others.
OWN_RATE = ("nwb", "movement")
#: The 2-D files (not: Anipose, C3D, BVH, DLC's 3-D CSV, the movement file written from
#: Anipose, and ndx-pose 0.1.1's file, whose (T, 3) series makes it 3-D).
TWO_D = sorted(
    [
        *(REALDATA / "dlc").glob("*"),
        *(REALDATA / "lightningpose").glob("*"),
        *(REALDATA / "sleap").glob("*"),
        *(REALDATA / "nwb").glob("*"),
        *(REALDATA / "movement").glob("*"),
        *(REALDATA / "unclaimed").glob("*.slp"),
    ]
)
THREE_D = ("dlc3_3d.csv", "0.1.1_poseestimation_nodes_edges.nwb")
TWO_D = [p for p in TWO_D if p.name not in THREE_D and "anipose" not in p.name]
IDS = [str(p.relative_to(REALDATA)) for p in TWO_D]
#: What each refused exporter says (the plan has no engine of its own).
REFUSED = {
    "mot": "not imported from an OpenSim model",
    "qpos": "no engine mapping",
}
FRAMES = 20
NOTE = "not observable from one view"


def _window(ds, kmap):
    """``FRAMES`` frames from the first one where a mapped keypoint is tracked."""
    seen = np.isfinite(ds["position"].sel(keypoint=list(kmap))).any(("space", "keypoint"))
    first = int(np.argmax(seen.any("individual").values))
    return ds.isel(time=slice(first, first + FRAMES), individual=slice(0, 2))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """``fitted(path) -> fit store``: each file ingested and fitted once, on first use."""
    plan = load_body_plan(PLAN)
    root = tmp_path_factory.mktemp("realdata2d")
    done: dict[Path, Path] = {}

    def fit(path: Path) -> Path:
        if path in done:
            return done[path]
        if not path.is_file():
            pytest.skip(f"{path}: the shared real data is not here")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reader notes (namespaces, untracked animals)
            ds = read_tracks(path, fps=None if path.parent.name in OWN_RATE else 30.0)
        assert ds.sizes["space"] == 2, path
        names = [str(k) for k in ds["keypoint"].values]
        kmap = dict(propose_keypoint_map(names, plan).mapping) or dict(
            zip(names, OBSERVED_JOINTS, strict=False)
        )
        name = str(path.relative_to(REALDATA)).replace("/", "_").replace(".", "_")
        tracks = write_tracks(_window(ds, kmap), root / "tracks" / f"{name}.zarr")
        out = root / "fits" / f"{name}.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unmapped keypoints, unknown up axes
            fit_session(tracks, plan, SolverConfig(), out, keypoint_map=kmap, check_units=False)
        done[path] = out
        return out

    return fit


@pytest.mark.parametrize("path", TWO_D, ids=IDS)
def test_a_real_2d_fit_reports_draws_and_exports_saying_what_it_cannot_see(path, fitted):
    store = fitted(path)
    fit = open_fit(store)
    assert fit.attrs["observation"]["kind"] == "image"
    assert "root_position/z" in fit.attrs["unobservable"]
    assert fit.attrs["residual_unit"] == "px" and fit.attrs["unit"] == "px"

    report = write_session_report(store, store.with_suffix(".html"))
    assert "Not observable from one view: root_position/z" in report.read_text("utf-8")

    # the notebook's views, as its cells call them
    individual = str(fit.individual.values[0])
    joint = next(iter(joint_dofs(fit)))
    observed = open_observed(fit)
    assert observed.sizes["space"] == 3  # the image plane inside the fit's 3-D frame
    plot_dof_trajectories(fit, individual=individual, dofs=joint)
    plot_residual_heatmap(fit, individual=individual)
    skeleton = plot_skeleton_frame(fit, observed, individual=individual)
    assert any("Not observable" in t.get_text() for t in skeleton.findobj(matplotlib.text.Text))
    viewer = view(fit, observed, joint=joint)
    assert "Not observable" in json.dumps(viewer.to_plotly_json(), default=str)
    plt.close("all")

    for name in AUTOMATIC_EXPORTS:
        target = store.parent / "exports" / f"{store.stem}{get_exporter(name).suffix}"
        if name in REFUSED:
            with pytest.raises(ExportError, match=REFUSED[name]):
                export(name, store, target)
            assert not target.exists()
            continue
        with pytest.warns(ExportWarning, match=NOTE):
            result = export(name, store, target)
        assert result.files and all(f.stat().st_size > 0 for f in result.files)


def test_a_real_2d_fit_s_observed_markers_lie_on_its_image_plane(fitted):
    path = REALDATA / "dlc" / "m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.h5"
    store = fitted(path)
    target = store.parent / "markers.trc"
    with pytest.warns(ExportWarning, match=NOTE):
        export("trc", store, target, keypoints="observed")
    lines = target.read_text("utf-8").splitlines()
    markers = [m.removesuffix("_observed") for m in lines[3].split("\t")[2:] if m]
    rows = np.loadtxt(target, skiprows=6, delimiter="\t")  # Frame#, Time, X1 Y1 Z1 ...
    xyz = rows[:, 2:].reshape(rows.shape[0], -1, 3)
    fit = open_fit(store)
    track_of = {joint: kp for kp, joint in fit.attrs["keypoint_map"]}
    tracks = open_tracks(fit.attrs["tracks_store"])["position"].isel(individual=0)
    want = tracks.sel(keypoint=[track_of[m] for m in markers]).transpose("time", "keypoint", ...)
    scale = float(fit.attrs["observation"]["image_scale"])  # estimated from the pixels
    np.testing.assert_allclose(xyz[..., :2], want.values * scale, rtol=1e-6)
    assert (xyz[..., 2][np.isfinite(xyz[..., 0])] == 0).all()  # on the image plane
    np.testing.assert_allclose(rows[:, 1], fit["time"].values, atol=1e-9)  # source times
