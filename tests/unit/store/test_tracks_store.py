import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

from pipeline.store import open_tracks, write_tracks
from pipeline.tracks import TracksError


def _entries(folder):
    return sorted(p.name for p in folder.iterdir())


def test_round_trip_is_identical_and_chunked_along_time_only(tmp_path, tracks):
    path = write_tracks(tracks, tmp_path / "t.zarr", chunk_frames=16)
    group = zarr.open_group(path, mode="r")
    assert group.metadata.zarr_format == 3
    assert group["position"].chunks == (16, 3, 4, 2)
    assert group["confidence"].chunks == (16, 4, 2)
    ds = open_tracks(path)
    assert ds["position"].chunks[0] == (16, 16, 16, 2)
    xr.testing.assert_identical(ds.load(), tracks)
    assert _entries(tmp_path) == ["t.zarr"]  # no temporary left behind


def test_rechunks_dask_backed_input(tmp_path, tracks):
    write_tracks(tracks, tmp_path / "a.zarr", chunk_frames=7)
    lazy = open_tracks(tmp_path / "a.zarr")
    write_tracks(lazy, tmp_path / "b.zarr", chunk_frames=20)
    assert zarr.open_group(tmp_path / "b.zarr")["position"].chunks[0] == 20
    xr.testing.assert_identical(open_tracks(tmp_path / "b.zarr").load(), tracks)


def test_existing_store_is_kept_unless_overwrite(tmp_path, tracks):
    path = write_tracks(tracks, tmp_path / "t.zarr")
    with pytest.raises(FileExistsError, match="already exists; pass overwrite=True"):
        write_tracks(tracks, path)
    changed = tracks.copy(deep=True)
    changed["position"][0, 0, 0, 0] = 42.0
    write_tracks(changed, path, overwrite=True)
    assert float(open_tracks(path)["position"][0, 0, 0, 0]) == 42.0


def _failing(tracks):
    def boom(block, block_info=None):
        if block_info[None]["chunk-location"][0] == 2:
            raise OSError("disk vanished while reading the source")
        return block

    lazy = tracks.chunk({"time": 10})
    position = da.map_blocks(boom, lazy["position"].data, dtype=np.float32)
    return lazy.assign(position=(lazy["position"].dims, position))


def test_a_failed_write_leaves_nothing_and_keeps_the_old_store(tmp_path, tracks):
    with pytest.raises(OSError, match="disk vanished"):
        write_tracks(_failing(tracks), tmp_path / "new.zarr", chunk_frames=10)
    assert _entries(tmp_path) == []
    old = write_tracks(tracks, tmp_path / "old.zarr")
    with pytest.raises(OSError, match="disk vanished"):
        write_tracks(_failing(tracks), old, chunk_frames=10, overwrite=True)
    assert _entries(tmp_path) == ["old.zarr"]
    xr.testing.assert_identical(open_tracks(old).load(), tracks)


def test_invalid_tracks_are_not_written(tmp_path, tracks):
    bad = tracks.assign_coords(time=tracks["time"].values[::-1])
    with pytest.raises(TracksError, match="not monotonic increasing"):
        write_tracks(bad, tmp_path / "t.zarr")
    assert _entries(tmp_path) == []


def test_open_tracks_validates(tmp_path, tracks):
    with pytest.raises(FileNotFoundError, match="no such tracks store"):
        open_tracks(tmp_path / "none.zarr")
    tracks.rename(space="xyz").to_zarr(tmp_path / "raw.zarr", consolidated=False)
    with pytest.raises(TracksError, match=r"(?s)raw.zarr: .*missing dims \['space'\]"):
        open_tracks(tmp_path / "raw.zarr")


def test_open_fit_refuses_other_and_partial_stores(tmp_path, tracks):
    from pipeline.store import FitStoreError, open_fit

    path = write_tracks(tracks, tmp_path / "t.zarr")
    with pytest.raises(FitStoreError, match="t.zarr: not a kinefit fit store"):
        open_fit(path)
    with pytest.raises(FileNotFoundError, match="no such fit store"):
        open_fit(tmp_path / "missing.zarr")
