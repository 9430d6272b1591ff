"""Frame rate policy: a file's own rate wins; ``fps`` only fills in a missing one."""

import warnings

import numpy as np
import pytest

from pipeline.tracks import make_tracks_dataset, read_tracks

CSV = "frame,keypoint,x,y,z\n0,a,0,0,0\n1,a,1,0,0\n2,a,2,0,0\n"


@pytest.fixture
def netcdf_at_50fps(tmp_path, rng):
    ds = make_tracks_dataset(
        rng.normal(size=(10, 3, 2, 1)).astype(np.float32),
        None,
        keypoints=["a", "b"],
        fps=50.0,
        source_software="test",
    )
    path = tmp_path / "rate50.nc"
    ds.drop_attrs(deep=False).assign_attrs(
        {k: v for k, v in ds.attrs.items() if v is not None}
    ).to_netcdf(path)
    return path


def test_conflicting_fps_is_ignored_with_a_warning_naming_both(netcdf_at_50fps):
    with pytest.warns(UserWarning, match=r"rate50\.nc: the file records 50 fps; ignoring fps=25"):
        ds = read_tracks(netcdf_at_50fps, fps=25)
    assert ds.attrs["fps"] == 50.0
    np.testing.assert_allclose(ds["time"], np.arange(10) / 50.0)


def test_matching_fps_is_silent(netcdf_at_50fps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_tracks(netcdf_at_50fps, fps=50).attrs["fps"] == 50.0


def test_fps_fills_in_when_the_file_has_none(tmp_path):
    path = tmp_path / "no_rate.csv"
    path.write_text(CSV)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = read_tracks(path, fps=20)
    assert ds.attrs["fps"] == 20.0 and ds.attrs["time_unit"] == "seconds"
    np.testing.assert_allclose(ds["time"], [0.0, 0.05, 0.1])


def test_a_bad_fps_is_an_error_even_when_the_file_has_a_rate(netcdf_at_50fps):
    with pytest.raises(ValueError, match="fps must be a positive number"):
        read_tracks(netcdf_at_50fps, fps=-1)


def test_force_fps_replaces_the_files_rate_and_keeps_it_beside(netcdf_at_50fps, tmp_path):
    from pipeline.store import open_tracks, write_tracks

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # forced: no "ignoring fps" warning
        ds = read_tracks(netcdf_at_50fps, fps=25, force_fps=True)
    assert ds.attrs["fps"] == 25.0 and ds.attrs["file_fps"] == 50.0
    np.testing.assert_allclose(ds["time"], np.arange(10) / 25.0)
    write_tracks(ds, tmp_path / "t.zarr")
    stored = open_tracks(tmp_path / "t.zarr")
    assert (stored.attrs["fps"], stored.attrs["file_fps"]) == (25.0, 50.0)


def test_force_fps_without_fps_is_an_error(netcdf_at_50fps):
    with pytest.raises(ValueError, match=r"rate50\.nc: force_fps \(--force-fps\) needs fps="):
        read_tracks(netcdf_at_50fps, force_fps=True)


def test_the_dlc2nwb_file_at_its_true_rate():
    from tests.fixtures.shared_data import SHARED

    path = SHARED / "data/realdata/nwb/m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.nwb"
    ds = read_tracks(path, fps=30, force_fps=True)
    assert (ds.attrs["fps"], ds.attrs["file_fps"]) == (30.0, 1.0)
    assert ds["time"].values[-1] == pytest.approx(2329 / 30)
