"""Acceptance 7: malformed tracks fail with one clear message and write nothing."""

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.errors import ConfigError
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.synth import SynthConfig, synthesize
from pipeline.tracks import TracksError, make_tracks_dataset


@pytest.fixture(scope="module")
def plan(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture(scope="module")
def good(plan):
    return synthesize(plan, SynthConfig(n_frames=60), np.random.default_rng(3)).tracks


def _raw(ds, path):
    """Write a store as is, bypassing kinefit's validation (as another tool might)."""
    ds.to_zarr(path, mode="w", consolidated=False)
    return path


def _fails(tracks_path, plan, match, tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(TracksError, match=match):
        fit_session(tracks_path, plan, SolverConfig(), tmp_path / "fit.zarr")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_wrong_dims(plan, good, tmp_path):
    path = _raw(good.isel(individual=0, drop=True), tmp_path / "t.zarr")
    _fails(
        path,
        plan,
        r"t.zarr: not a valid tracks dataset.*\n.*missing dims \['individual'\]",
        tmp_path,
    )


def test_wrong_space_size(plan, good, tmp_path):
    wide = good.isel(space=[0, 1, 2, 2]).assign_coords(space=np.array(list("xyzw"), dtype=object))
    _fails(
        _raw(wide, tmp_path / "t.zarr"),
        plan,
        r"space: expected 2 or 3 components \(x, y\[, z\]\), got 4",
        tmp_path,
    )


def test_two_dimensional_tracks_with_a_bad_image_scale(plan, good, tmp_path):
    # 2-D tracks are fitted on the image plane (pipeline.fit.view_setup); the scale must be > 0
    flat = write_tracks(good.isel(space=[0, 1]), tmp_path / "t.zarr")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ConfigError, match="image_scale: must be a positive length per pixel"):
        fit_session(flat, plan, SolverConfig(), tmp_path / "fit.zarr", image_scale=0.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_no_keypoint_maps_to_any_joint(good, tmp_path):
    path = write_tracks(good, tmp_path / "t.zarr")
    _fails(
        path,
        mannequin(),
        r"no track keypoint maps to a body-plan joint.*Joints: \['pelvis'",
        tmp_path,
    )


def test_all_nan_session(plan, good, tmp_path):
    empty = good.copy(deep=True)
    empty["position"][:] = np.nan
    _fails(write_tracks(empty, tmp_path / "t.zarr"), plan, "all-NaN session", tmp_path)


def test_non_monotonic_time(plan, good, tmp_path):
    time = good["time"].values.copy()
    time[[10, 11]] = time[[11, 10]]
    path = _raw(good.assign_coords(time=time), tmp_path / "t.zarr")
    _fails(path, plan, r"time: not monotonic increasing \(first decrease at index 11\)", tmp_path)


def test_every_problem_in_one_message(plan, good, tmp_path):
    bad = good.assign_coords(keypoint=np.array(["thorax"] * good.sizes["keypoint"], dtype=object))
    bad = bad.assign_coords(time=np.zeros(good.sizes["time"]))
    path = _raw(bad, tmp_path / "t.zarr")
    _fails(path, plan, r"(?s)duplicated time stamps.*keypoint: duplicated names", tmp_path)


def test_missing_store(plan, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such tracks store"):
        fit_session(tmp_path / "none.zarr", plan, SolverConfig(), tmp_path / "fit.zarr")
    assert not (tmp_path / "fit.zarr").exists()


def test_unmapped_keypoints_are_reported_and_recorded(plan, good, tmp_path):
    extra = make_tracks_dataset(
        np.concatenate([good["position"].values, good["position"].values[:, :, :1]], axis=2),
        keypoints=[*good["keypoint"].values, "antenna"],
        fps=100.0,
        source_software="test",
    )
    path = write_tracks(extra, tmp_path / "t.zarr")
    with pytest.warns(UserWarning, match=r"without a joint.*\['antenna'\]"):
        report = fit_session(path, plan, SolverConfig(), tmp_path / "fit.zarr")
    assert report.unmapped_keypoints == ("antenna",)
    from pipeline.store.fit import open_fit

    assert open_fit(tmp_path / "fit.zarr").attrs["unmapped_keypoints"] == ["antenna"]


def test_refuses_to_replace_what_is_not_a_fit_store(plan, good, tmp_path):
    from pipeline.fit import FitError

    tracks = write_tracks(good, tmp_path / "t.zarr")
    with pytest.raises(FitError, match="would overwrite the input tracks store"):
        fit_session(tracks, plan, SolverConfig(), tracks)
    other = write_tracks(good, tmp_path / "other.zarr")
    with pytest.raises(FitError, match="other.zarr: exists and is not a kinefit fit store"):
        fit_session(tracks, plan, SolverConfig(), other)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.zarr", "t.zarr"]
