import numpy as np
import pytest
import xarray as xr

from pipeline.tracks.schema import TracksError, make_tracks_dataset, validate_tracks


def _tracks(n_frames=5, n_keypoints=2, n_individuals=1, fps=10.0):
    position = np.arange(n_frames * 3 * n_keypoints * n_individuals, dtype=float).reshape(
        n_frames, 3, n_keypoints, n_individuals
    )
    return make_tracks_dataset(
        position,
        keypoints=[f"kp{i}" for i in range(n_keypoints)],
        fps=fps,
        source_software="test",
    )


def test_make_tracks_dataset_follows_the_movement_poses_schema():
    ds = _tracks()
    assert ds["position"].dims == ("time", "space", "keypoint", "individual")
    assert ds["confidence"].dims == ("time", "keypoint", "individual")
    assert ds["position"].dtype == np.float32 and ds["confidence"].dtype == np.float32
    assert np.all(np.isnan(ds["confidence"]))
    np.testing.assert_allclose(ds["time"], np.arange(5) / 10.0)
    assert ds["keypoint"].dtype == object and list(ds["space"].values) == ["x", "y", "z"]
    assert list(ds["individual"].values) == ["individual_0"]
    assert ds.attrs["ds_type"] == "poses" and ds.attrs["time_unit"] == "seconds"
    for key in ("source_software", "fps", "source_file", "session", "unit", "up_axis"):
        assert key in ds.attrs


def test_without_fps_time_counts_frames():
    ds = _tracks(fps=None)
    assert ds.attrs["time_unit"] == "frames" and ds.attrs["fps"] is None
    np.testing.assert_array_equal(ds["time"], np.arange(5))


def test_source_file_checksum_is_recorded(tmp_path):
    source = tmp_path / "session.bin"
    source.write_bytes(b"abc")
    ds = make_tracks_dataset(
        np.zeros((2, 3, 1)), keypoints=["a"], fps=1.0, source_software="t", source_file=source
    )
    assert ds.attrs["source_sha256"] == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_plural_dim_names_are_renamed():
    ds = _tracks().rename(keypoint="keypoints", individual="individuals")
    out = validate_tracks(ds)
    assert out["position"].dims == ("time", "space", "keypoint", "individual")
    assert "keypoints" not in out.dims


def test_transposed_position_is_put_in_contract_order():
    ds = _tracks()
    ds["position"] = ds["position"].transpose("individual", "keypoint", "time", "space")
    assert validate_tracks(ds)["position"].dims == ("time", "space", "keypoint", "individual")


def test_every_problem_is_reported_at_once():
    ds = _tracks(n_keypoints=2)
    ds = ds.assign_coords(keypoint=np.array(["a", "a"], dtype=object), time=[0, 2, 1, 1, 4])
    ds = ds.isel(space=[0, 1, 2, 0]).assign_coords(space=["x", "y", "z", "w"])
    ds.attrs["fps"] = -1
    with pytest.raises(TracksError) as info:
        validate_tracks(ds, source="bad.zarr")
    message = str(info.value)
    assert message.startswith("bad.zarr: not a valid tracks dataset")
    for part in (
        "space: expected 2 or 3",
        "not monotonic increasing",
        "duplicated time stamps",
        "keypoint: duplicated names ['a']",
        "attrs.fps",
    ):
        assert part in message


def test_missing_dims_and_variables_are_named():
    ds = xr.Dataset({"pos": (("time", "space"), np.zeros((3, 3)))}, coords={"time": [0, 1, 2]})
    with pytest.raises(TracksError, match=r"missing dims \['keypoint', 'individual'\]") as info:
        validate_tracks(ds, source="f.nc")
    assert "missing variable 'position'" in str(info.value)


def test_wrong_space_names_and_dtype():
    ds = _tracks().assign_coords(space=["a", "b", "c"])
    with pytest.raises(TracksError, match=r"space: expected names \['x', 'y', 'z'\]"):
        validate_tracks(ds)
    ds = _tracks()
    ds["position"] = ds["position"].astype(str)
    with pytest.raises(TracksError, match="position: expected real numbers"):
        validate_tracks(ds)


def test_missing_confidence_is_filled_with_nan_and_warned():
    ds = _tracks().drop_vars("confidence")
    with pytest.warns(UserWarning, match="no 'confidence' variable"):
        out = validate_tracks(ds)
    assert out["confidence"].dims == ("time", "keypoint", "individual")
    assert np.all(np.isnan(out["confidence"]))


def test_two_dimensional_tracks_are_valid():
    ds = make_tracks_dataset(
        np.zeros((4, 2, 3)), keypoints=list("abc"), space=("x", "y"), fps=5, source_software="t"
    )
    assert ds.sizes["space"] == 2
