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
