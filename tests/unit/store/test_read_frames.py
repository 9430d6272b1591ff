"""read_frames: the chunk tasks' and the input scan's plain-zarr reader of a tracks store."""

import numpy as np
import pytest
import xarray as xr

from pipeline.store import write_tracks
from pipeline.store.tracks import read_frames
from pipeline.tracks import TracksError
from pipeline.tracks.schema import CONFIDENCE_DIMS, DIMS


@pytest.mark.parametrize(("start", "stop"), [(0, 50), (5, 37), (16, 32), (40, 50), (49, 50)])
def test_frames_equal_what_xarray_reads(tmp_path, tracks, start, stop):
    path = write_tracks(tracks, tmp_path / "t.zarr", chunk_frames=16)
    for name, dims in (("position", DIMS), ("confidence", CONFIDENCE_DIMS)):
        got = read_frames(path, name, dims, start, stop)
        want = tracks[name].isel(time=slice(start, stop)).transpose(*dims).values
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want.astype(np.float32))


def test_other_dim_order_and_plural_names_are_transposed(tmp_path, tracks):
    # movement's older layout: (time, individuals, keypoints, space)
    ds = tracks.rename({"keypoint": "keypoints", "individual": "individuals"})
    ds = ds.transpose("time", "individuals", "keypoints", "space")
    ds.to_zarr(tmp_path / "m.zarr", mode="w", consolidated=False, zarr_format=3)
    got = read_frames(tmp_path / "m.zarr", "position", DIMS, 3, 30)
    want = tracks["position"].isel(time=slice(3, 30)).transpose(*DIMS).values
    np.testing.assert_array_equal(got, want)


def test_cf_packed_values_are_decoded(tmp_path, tracks):
    ds = tracks.copy()
    ds["position"] = ds["position"].astype(np.float64)
    ds["position"].encoding = {"dtype": "int16", "scale_factor": 0.001, "_FillValue": -32768}
    ds.to_zarr(tmp_path / "p.zarr", mode="w", consolidated=False, zarr_format=3)
    got = read_frames(tmp_path / "p.zarr", "position", DIMS, 0, 50)
    want = xr.open_zarr(tmp_path / "p.zarr", consolidated=False)["position"].values
    np.testing.assert_array_equal(got, want.astype(np.float32))  # NaN where masked
    assert np.isnan(got[10:20, :, 2, 1]).all()
    np.testing.assert_allclose(got, tracks["position"].values, atol=6e-4)


def test_unreadable_chunk_names_the_store_and_field(tmp_path, tracks):
    path = write_tracks(tracks, tmp_path / "t.zarr", chunk_frames=16)
    chunk = next(p for p in (path / "position" / "c").rglob("*") if p.is_file())
    chunk.write_bytes(b"not a compressed chunk")
    with pytest.raises(TracksError, match=r"t\.zarr: field 'position': cannot read"):
        read_frames(path, "position", DIMS, 0, 50)
    with pytest.raises(TracksError, match=r"field 'speed': cannot read"):
        read_frames(path, "speed", DIMS, 0, 50)
