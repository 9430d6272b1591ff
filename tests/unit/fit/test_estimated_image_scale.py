"""A single-view fit estimates its image scale unless told, records it, and says so.

The session is SLEAP's ``minimal_back_proofread.slp`` mouse (120 frames) fitted with the
``mouse_topdown`` plan through a hand map; the estimate itself is checked against a scan
in ``tests/unit/calibrate/test_image_scale.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.attrs import store_attrs
from pipeline.tracks.schema import make_tracks_dataset
from tests.unit.calibrate.test_image_scale import PLAN, SLP_MAP, slp_session


@pytest.fixture(scope="module")
def slp_store(tmp_path_factory):
    ds, _, _ = slp_session()
    folder = tmp_path_factory.mktemp("slp")
    (folder / "map.yaml").write_text("".join(f"{k}: {v}\n" for k, v in SLP_MAP.items()))
    return write_tracks(ds, folder / "slp.zarr"), folder


def _fit(store, out, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keypoints the plan has no joint for
        return fit_session(store, PLAN, SolverConfig(), out, keypoint_map=SLP_MAP, **options)


@pytest.mark.slow
def test_fit_estimates_records_and_reuses_the_scale(slp_store):
    store, folder = slp_store
    out = folder / "estimated.zarr"
    assert not _fit(store, out).skipped
    attrs = store_attrs(out)
    obs, estimate = attrs["observation"], attrs["image_scale_estimate"]
    assert obs["image_scale_source"] == "estimated"
    assert obs["image_scale"] == estimate["value"] and 0.45 < estimate["value"] < 0.75
    assert "depth is unobservable" in estimate["note"] and estimate["frames"] == 120
    assert _fit(store, out).skipped  # the estimate is a function of what is fingerprinted

    given = folder / "given.zarr"
    assert not _fit(store, given, image_scale=0.5).skipped
    attrs = store_attrs(given)
    assert attrs["observation"]["image_scale"] == 0.5
    assert attrs["observation"]["image_scale_source"] == "given"
    assert attrs["image_scale_estimate"] is None
    assert _fit(store, given, image_scale=0.5).skipped
    assert not _fit(store, given, image_scale=0.6).skipped  # another scale: another fit
    assert store_attrs(given)["observation"]["image_scale"] == 0.6
    assert not _fit(store, given).skipped  # and an estimate is not the given scale


def test_cli_summary_prints_the_estimate(slp_store):
    store, folder = slp_store
    out = folder / "cli.zarr"
    args = ["fit", str(store), "-o", str(out), "-b", str(PLAN), "--workers", "0"]
    result = CliRunner().invoke(app, [*args, "--keypoint-map", str(folder / "map.yaml")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "image scale" in text and "estimated +-" in text
    assert "depth unobservable from one view" in text and "--image-scale overrides" in text
    rms = float(text.split("median RMS ")[1].split()[0])
    assert 5 < rms < 14  # pixels: the store's own RMS (pixels, not plan lengths)


def test_nothing_to_measure_falls_back_to_one_and_warns(tmp_path):
    position = np.full((20, 2, 4, 1), np.nan, np.float32)
    position[:, :, 0, 0] = 100.0  # only the snout is ever seen
    ds = make_tracks_dataset(
        position,
        None,
        keypoints=["snout", "leftear", "rightear", "tailbase"],
        fps=30.0,
        space=("x", "y"),
        source_software="test",
    )
    store = write_tracks(ds, tmp_path / "one.zarr")
    with pytest.warns(UserWarning, match="image scale: no frame sees two mapped keypoints"):
        fit_session(store, PLAN, SolverConfig(), tmp_path / "fit.zarr")
    obs = store_attrs(tmp_path / "fit.zarr")["observation"]
    assert obs["image_scale"] == 1.0 and obs["image_scale_source"] == "default"
