"""One number, one meaning: a real single-view fit's RMS error is pixels everywhere.

SLEAP's ``minimal_back_proofread.slp`` mouse (its first 40 frames) is fitted with
``kinefit fit`` (in-process) on the ``mouse_topdown`` plan through a hand map, the image
scale estimated (about 0.6 plan lengths per pixel, so plan lengths and pixels differ).
The reference is recomputed outside the solver from the store's own records: the stored
fitted keypoints divided by the stored ``image_scale`` against the tracks store's
detections, in pixels. The store's ``residual`` and ``rms_error`` must be that; the CLI
summary, the CSV export and the HTML report must print the same median, and the viewer
draw the same per-frame RMS on a px axis.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from flows.cli.app import app
from pipeline.export.exporter_registry import export
from pipeline.inspect import open_observed, view
from pipeline.inspect.report.pages import write_session_report
from pipeline.inspect.viewer.encoding import decode
from pipeline.store import open_tracks, write_tracks
from pipeline.store.fit import open_fit
from tests.unit.calibrate.test_image_scale import PLAN, SLP_MAP, slp_session

FRAMES = 40


def _pixel_errors(fit) -> tuple[np.ndarray, np.ndarray]:
    """Outside residuals ``(time, individual, keypoint)`` and RMS ``(time, individual)``, px."""
    scale = float(fit.attrs["observation"]["image_scale"])
    track_of = {joint: keypoint for keypoint, joint in fit.attrs["keypoint_map"]}
    tracks = open_tracks(fit.attrs["tracks_store"]).load()
    joints = [str(k) for k in fit["keypoint"].values]
    fitted = fit["fitted_position"].transpose("time", "individual", "keypoint", "space")
    predicted = np.asarray(fitted.values, np.float64)[..., :2] / scale
    pixels = np.full(predicted.shape, np.nan)
    seen = np.zeros(predicted.shape[:3], dtype=bool)
    for j, joint in enumerate(joints):
        if joint not in track_of:
            continue
        one = tracks.sel(keypoint=track_of[joint])
        xy = one["position"].transpose("time", "individual", "space").values
        conf = one["confidence"].transpose("time", "individual").values
        pixels[:, :, j] = xy
        seen[:, :, j] = np.isfinite(xy).all(axis=-1) & ~(conf <= 0)  # NaN confidence counts
    d2 = np.where(seen, np.sum((predicted - pixels) ** 2, axis=-1), np.nan)
    residual = np.sqrt(d2)
    rms = np.sqrt(np.nanmean(d2, axis=-1))
    return residual, rms


def test_store_cli_csv_and_report_agree_on_the_pixel_rms(tmp_path):
    ds, _, _ = slp_session()
    tracks = write_tracks(ds.isel(time=slice(0, FRAMES)), tmp_path / "slp.zarr")
    keypoint_map = tmp_path / "map.yaml"
    keypoint_map.write_text("".join(f"{k}: {v}\n" for k, v in SLP_MAP.items()))
    out = tmp_path / "fit.zarr"
    args = ["fit", str(tracks), "-o", str(out), "-b", str(PLAN), "--workers", "0"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keypoints the plan has no joint for
        result = CliRunner().invoke(app, [*args, "--keypoint-map", str(keypoint_map)])
    assert result.exit_code == 0, result.output

    fit = open_fit(out).load()
    assert fit.attrs["residual_unit"] == "px"
    observation = fit.attrs["observation"]
    assert observation["image_scale_source"] == "estimated"
    assert abs(np.log(observation["image_scale"])) > 0.2  # pixels and plan lengths differ
    assert (fit["stop_reason"].values != 3).all()  # every frame observed: medians agree
    residual, rms = _pixel_errors(fit)
    stored = fit["residual"].transpose("time", "individual", "keypoint").values
    np.testing.assert_allclose(stored, residual, rtol=1e-4, atol=1e-4)
    store_rms = fit["rms_error"].transpose("time", "individual").values
    np.testing.assert_allclose(store_rms, rms, rtol=1e-4, atol=1e-4)
    one = fit["reprojection_error"].isel(view=0).transpose("time", "individual", "keypoint")
    np.testing.assert_allclose(one.values, residual, rtol=1e-4, atol=1e-4)
    median = f"{np.median(rms):.4g}"
    print(f"slp mouse, {FRAMES} frames: median RMS {median} px (scale "
          f"{observation['image_scale']:.4g} plan lengths per px)")  # fmt: skip

    text = " ".join(result.output.split())
    assert f"median RMS {median} px" in text, text
    assert "per core, solving only" in text and "wall time" in text
    assert "the image-scale estimate" in text  # the wall time says what it holds

    csv = tmp_path / "fit.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what one view cannot observe
        export("csv", out, csv)
    table = pd.read_csv(csv)
    np.testing.assert_allclose(table["rms_error [px]"].values, rms.T.ravel(), rtol=1e-4)

    report = write_session_report(out, tmp_path / "fit.html").read_text("utf-8")
    shown = re.search(r"<th>median RMS \(px\)</th><td>([^<]+)</td>", report)
    assert shown is not None and shown.group(1) == median

    figure = view(fit, open_observed(fit)).to_plotly_json()
    assert figure["layout"]["yaxis2"]["title"]["text"] == "RMS error (px)"
    (line,) = [d for d in figure["data"] if (d.get("meta") or {}).get("kinefit") == "rms"]
    np.testing.assert_allclose(decode(line["y"]), rms[:, 0], rtol=1e-4)
