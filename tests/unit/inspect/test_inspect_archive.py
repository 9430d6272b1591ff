"""open_archive: discovery, lazy opening, the summary table, observed keypoints."""

import shutil

import numpy as np
import pytest
import xarray as xr
import zarr

from pipeline.inspect import (
    FitArchive,
    InspectError,
    find_fit_stores,
    observed_positions,
    open_archive,
    open_observed,
    summary_table,
)
from pipeline.inspect.data.summaries import SUMMARY_COLUMNS
from pipeline.store import open_tracks


def test_open_archive_finds_every_session_at_any_depth_and_opens_them_lazily(fits_root):
    archive = open_archive(fits_root)
    assert isinstance(archive, FitArchive)
    assert list(archive) == ["lab_b/hop", "walk"] and len(archive) == 2
    assert archive.paths["walk"] == fits_root / "walk.zarr"
    assert archive.problems == {}
    for fit in archive.values():
        assert isinstance(fit, xr.Dataset)
        assert fit["dof_value"].chunks is not None  # dask-backed: nothing loaded
    assert archive["walk"].sizes["individual"] == 2
    assert "walk" in repr(archive)


def test_summary_table_matches_the_diagnostics(fits_root):
    archive = open_archive(fits_root)
    table = archive.summary
    assert list(table.columns) == list(SUMMARY_COLUMNS)
    assert list(table.index) == ["lab_b/hop", "walk"] and table.index.name == "session"
    for key, fit in archive.items():
        row = table.loc[key]
        rms = fit["rms_error"].values.astype(float)
        assert row["frames"] == fit.sizes["time"]
        assert row["individuals"] == fit.sizes["individual"]
        assert row["median_rms"] == pytest.approx(np.nanmedian(rms))
        assert row["worst_rms"] == pytest.approx(np.nanmax(rms))
        t, i = np.unravel_index(np.nanargmax(rms), rms.shape)
        assert row["worst_time"] == pytest.approx(float(fit["time"][t]))
        assert row["worst_individual"] == str(fit["individual"].values[i])
        assert row["non_converged_fraction"] == pytest.approx(1 - fit["converged"].values.mean())
        assert row["limit_active_fraction"] == pytest.approx(fit["limit_active"].values.mean())
        assert row["max_seam_disagreement"] == pytest.approx(
            np.nanmax(fit["seam_disagreement"].values)
        )
    # the noisy session did what the fixture meant it to
    assert table.loc["walk", "non_converged_fraction"] > 0
    assert table.loc["walk", "limit_active_fraction"] > 0
    assert table.loc["walk", "worst_rms"] > table.loc["lab_b/hop", "worst_rms"]


def test_archive_leaves_out_unfinished_and_incomplete_fits_and_ignores_tracks(archive_copy):
    fits = archive_copy / "fits"
    shutil.copytree(fits / "walk.zarr", fits / ".late.zarr.partial")
    shutil.copytree(fits / "walk.zarr", fits / "half.zarr")
    zarr.open_group(fits / "half.zarr", mode="r+").attrs["complete"] = False
    shutil.copytree(archive_copy / "tracks", fits / "inputs")  # tracks stores: not fits
    stores, problems = find_fit_stores(fits)
    assert list(stores) == ["lab_b/hop", "walk"]
    assert set(problems) == {str(fits / ".late.zarr.partial"), str(fits / "half.zarr")}
    assert "unfinished" in problems[str(fits / ".late.zarr.partial")]
    assert "incomplete" in problems[str(fits / "half.zarr")]
    assert list(open_archive(fits)) == ["lab_b/hop", "walk"]


def test_a_single_fit_store_is_an_archive_of_one(fits_root):
    archive = open_archive(fits_root / "walk.zarr")
    assert list(archive) == ["walk"]


def test_missing_root_and_unknown_session_name_the_problem(fits_root, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere: no such fits folder"):
        open_archive(tmp_path / "nowhere")
    archive = open_archive(fits_root)
    with pytest.raises(KeyError, match="no session 'run9'.*sessions: lab_b/hop, walk"):
        archive["run9"]
    empty = open_archive(tmp_path)
    assert len(empty) == 0 and empty.summary.empty


def test_datatree_view_has_one_node_per_session(fits_root):
    tree = open_archive(fits_root).to_datatree()
    assert tree["walk"].to_dataset().sizes["individual"] == 2
    assert "hop" in tree["lab_b"].children


def test_open_observed_returns_the_tracks_in_joint_order(walk):
    observed = open_observed(walk)
    tracks = open_tracks(walk.attrs["tracks_store"])
    assert observed.dims == ("time", "space", "keypoint", "individual")
    assert list(observed["keypoint"].values) == list(walk["keypoint"].values)
    np.testing.assert_array_equal(
        observed.sel(keypoint="knee_l").values, tracks["position"].sel(keypoint="knee_l").values
    )


def test_observed_positions_follow_the_fits_keypoint_map(walk):
    tracks = open_tracks(walk.attrs["tracks_store"]).load()
    renamed = tracks.assign_coords(keypoint=[f"kp_{k}" for k in tracks["keypoint"].values])
    renamed = renamed.drop_sel(keypoint="kp_nose")  # nose: not tracked
    fit = walk.assign_attrs(
        keypoint_map=[[f"kp_{k}", k] for k in walk["keypoint"].values if k != "nose"]
    )
    observed = observed_positions(fit, renamed)
    assert list(observed["keypoint"].values) == list(walk["keypoint"].values)
    assert np.isnan(observed.sel(keypoint="nose").values).all()
    xr.testing.assert_equal(
        observed.drop_sel(keypoint="nose").drop_attrs(),
        tracks["position"].drop_sel(keypoint="nose").rename("observed_position").drop_attrs(),
    )
    with pytest.raises(InspectError, match="no track keypoint observes a joint.*track keypoints"):
        observed_positions(walk, renamed)


def test_open_observed_explains_a_moved_tracks_store(walk):
    moved = walk.assign_attrs(tracks_store="/nonexistent/walk.zarr")
    with pytest.raises(FileNotFoundError, match="walk.zarr: the fit's tracks store is no longer"):
        open_observed(moved)
    with pytest.raises(FileNotFoundError, match="records no tracks store"):
        open_observed(walk.assign_attrs(tracks_store=None))


def test_summary_table_of_any_mapping(walk, hop):
    table = summary_table({"b": hop, "a": walk})
    assert list(table.index) == ["b", "a"]
