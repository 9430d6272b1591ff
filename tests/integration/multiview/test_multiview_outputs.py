"""A multi-camera fit goes everywhere a 3-D fit goes: units, report, views, every export.

A synthetic rig session (four cameras 3.5 m around the mannequin, metres, 2 px noise, no
outliers; 6 frames) is ingested and fitted with the CLI directly and by
triangulate-then-fit. The stores say metres for the 3-D pose and which unit their
residuals are in (pixels for the direct fit, metres for the triangulated one), and the
fit summary prints the same; the report, the notebook's views and every automatic
exporter run; the ``.trc``'s observed markers are the views' detections triangulated
through the fit's cameras (held against the synthetic truth); ``body-plan map`` reads
the multi-view store.
"""

from __future__ import annotations

import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from pipeline.bodyplan import mannequin, save_body_plan
from pipeline.cameras.triangulate import triangulate
from pipeline.errors import ExportError
from pipeline.export.exporter_registry import AUTOMATIC_EXPORTS, export, get_exporter
from pipeline.inspect import (
    joint_dofs,
    open_observed,
    plot_dof_trajectories,
    plot_residual_heatmap,
    plot_skeleton_frame,
    view,
)
from pipeline.inspect.report.pages import write_session_report
from pipeline.store.fit import open_fit
from pipeline.synth.camera_views import ViewsConfig
from tests.fixtures.multiview_rig import mannequin_rig, write_rig_session

matplotlib.use("agg")

pytestmark = pytest.mark.slow

QUIET = ViewsConfig(occlusion=0.0, occlusion_run=1, single_view=0.0, outliers=0.0)
#: Refusals that are the plan's, not the views': the mannequin is no OpenSim/MJCF model.
REFUSED = {"mot": "not imported from an OpenSim model", "qpos": "no engine mapping"}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rig")
    plan = mannequin()
    plan_path = save_body_plan(plan, folder / "mannequin.json")
    rig = write_rig_session(folder / "files", plan, mannequin_rig(), n_frames=6, views=QUIET)
    store = folder / "trial.zarr"
    runner = CliRunner()
    pairs = [f"{v}={p}" for v, p in rig.views.items()]
    args = ["ingest", "--views", *pairs, "--calibration", str(rig.calibration)]
    result = runner.invoke(app, [*args, "--unit", "m", "--fps", "100", "-o", str(store)])
    assert result.exit_code == 0, result.output
    fits, printed = {}, {}
    for mode in ("direct", "triangulate"):
        out = folder / f"{mode}.zarr"
        args = ["fit", str(store), "-o", str(out), "-b", str(plan_path), "--workers", "0"]
        result = runner.invoke(app, [*args, "--multiview", mode])
        assert result.exit_code == 0, result.output
        fits[mode], printed[mode] = out, result.output
    return rig, store, plan_path, fits, printed


@pytest.mark.parametrize(("mode", "residual"), [("direct", "px"), ("triangulate", "m")])
def test_units_are_metres_for_the_pose_and_the_residuals_own(session, mode, residual):
    _, _, _, fits, printed = session
    fit = open_fit(fits[mode])
    assert fit.attrs["unit"] == "m" and fit.attrs["residual_unit"] == residual
    assert fit.attrs["tracks_unit"] == "px"
    assert re.search(rf"median RMS\s+[0-9.e+-]+ {residual}\b", printed[mode]), printed[mode]


@pytest.mark.parametrize("mode", ["direct", "triangulate"])
def test_report_views_and_every_export_run_on_a_multiview_fit(session, mode):
    store = session[3][mode]
    fit = open_fit(store)
    html = write_session_report(store, store.with_suffix(".html")).read_text("utf-8")
    assert "median RMS (px)" in html if mode == "direct" else "median RMS (m)" in html
    individual = str(fit.individual.values[0])
    joint = next(j for j, d in joint_dofs(fit).items() if d)
    observed = open_observed(fit)
    plot_dof_trajectories(fit, individual=individual, dofs=joint)
    plot_residual_heatmap(fit, individual=individual)
    plot_skeleton_frame(fit, observed, individual=individual)
    view(fit, observed, joint=joint)
    plt.close("all")
    for name in AUTOMATIC_EXPORTS:
        target = store.parent / "exports" / f"{mode}{get_exporter(name).suffix}"
        if name in REFUSED:
            with pytest.raises(ExportError, match=REFUSED[name]):
                export(name, store, target)
            continue
        result = export(name, store, target)
        assert result.files and all(f.stat().st_size > 0 for f in result.files)


def test_trc_observed_markers_are_the_detections_triangulated(session):
    rig, _, _, fits, _ = session
    store = fits["direct"]
    target = store.parent / "observed.trc"
    export("trc", store, target, keypoints="observed")
    lines = target.read_text("utf-8").splitlines()
    assert lines[2].split("\t")[4] == "m"  # Units
    markers = [m.removesuffix("_observed") for m in lines[3].split("\t")[2:] if m]
    rows = np.loadtxt(target, skiprows=6, delimiter="\t")
    xyz = rows[:, 2:].reshape(rows.shape[0], -1, 3)
    truth = rig.truth["position"].isel(individual=0).sel(keypoint=markers)
    truth = truth.transpose("time", "keypoint", "space").values
    error = np.linalg.norm(xyz - truth, axis=-1)
    assert np.isfinite(error).mean() > 0.9
    assert np.nanmedian(error) < 0.02  # 2 px at 3.5 m (f = 1100 px) through 4 views
    # the same detections triangulated with the rig's own cameras: the export's frame
    # is the plan's (+y up, as the rig's world), the views in the cameras' order
    joints = [list(rig.truth["keypoint"].values).index(m) for m in markers]
    dlt = triangulate(rig.cameras, np.moveaxis(rig.pixels[:, :, joints], 1, 2))
    np.testing.assert_allclose(xyz, dlt, atol=1e-5)


def test_body_plan_map_reads_a_multiview_store(session):
    _, store, plan_path, _, _ = session
    result = CliRunner().invoke(app, ["body-plan", "map", str(store), str(plan_path)])
    assert result.exit_code == 0, result.output
    assert "pelvis: pelvis" in result.output
