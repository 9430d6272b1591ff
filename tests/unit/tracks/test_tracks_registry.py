import numpy as np
import pytest
import xarray as xr

from pipeline.store import write_tracks
from pipeline.tracks import READER_MODULES, TracksError, make_tracks_dataset, read_tracks
from pipeline.tracks.reader_registry import pick_reader, readers

CSV = """frame,individual,keypoint,x,y,z,confidence
10,fly0,head,0.1,0.2,0.3,0.9
10,fly0,tail,1.1,1.2,1.3,0.8
12,fly1,head,2.1,2.2,2.3,0.5
"""


@pytest.fixture
def tracks(rng):
    position = rng.normal(size=(20, 3, 4, 2)).astype(np.float32)
    position[3, :, 1, 0] = np.nan
    confidence = rng.uniform(size=(20, 4, 2)).astype(np.float32)
    return make_tracks_dataset(
        position,
        confidence,
        keypoints=["a", "b", "c", "d"],
        individuals=["m1", "m2"],
        fps=50.0,
        source_software="test",
        unit="mm",
    )


def test_every_reader_module_follows_the_protocol():
    found = readers()
    assert set(found) >= {"movement", "npz", "csv"}
    assert len(found) == len(READER_MODULES)
    for fmt, module in found.items():
        assert fmt == module.FORMAT
        assert all(s.startswith(".") and s == s.lower() for s in module.SUFFIXES)
        assert callable(module.sniff) and callable(module.read)


def test_movement_netcdf_round_trip(tmp_path, tracks):
    path = tmp_path / "session.nc"
    attrs = {k: v for k, v in tracks.attrs.items() if v is not None}
    tracks.drop_attrs(deep=False).assign_attrs(attrs).to_netcdf(path)
    ds = read_tracks(path)
    assert pick_reader(path).FORMAT == "movement"
    np.testing.assert_array_equal(ds["position"], tracks["position"])
    np.testing.assert_array_equal(ds["confidence"], tracks["confidence"])
    assert list(ds["individual"].values) == ["m1", "m2"] and ds.attrs["fps"] == 50.0


def test_movement_netcdf_with_plural_dims_and_frame_time(tmp_path, tracks):
    old = tracks.rename(keypoint="keypoints", individual="individuals")
    old = old.assign_coords(time=np.arange(20)).drop_attrs()
    old.attrs["source_software"] = "DeepLabCut"
    old.to_netcdf(tmp_path / "old.nc")
    with pytest.raises(TracksError, match="frame rate is unknown"):
        read_tracks(tmp_path / "old.nc")
    ds = read_tracks(tmp_path / "old.nc", fps=10)
    np.testing.assert_allclose(ds["time"], np.arange(20) / 10)
    assert ds.attrs["time_unit"] == "seconds" and "keypoint" in ds.dims


def test_movement_zarr_is_read_lazily(tmp_path, tracks):
    write_tracks(tracks, tmp_path / "t.zarr", chunk_frames=8)
    ds = read_tracks(tmp_path / "t.zarr")
    assert ds["position"].chunks is not None
    xr.testing.assert_identical(ds.load(), tracks)


def test_npz_single_and_multi_individual(tmp_path, tracks):
    single = tmp_path / "one.npz"
    np.savez(single, position=np.zeros((5, 2, 3)), keypoints=np.array(["a", "b"]), fps=25.0)
    ds = read_tracks(single)
    assert ds.sizes == {"time": 5, "space": 3, "keypoint": 2, "individual": 1}
    assert ds.attrs["fps"] == 25.0 and ds.attrs["source_sha256"]
    multi = tmp_path / "two.npz"
    np.savez(
        multi,
        position=tracks["position"].values.transpose(0, 3, 2, 1),
        confidence=tracks["confidence"].values.transpose(0, 2, 1),
        keypoints=np.array(["a", "b", "c", "d"]),
        individuals=np.array(["m1", "m2"]),
    )
    ds = read_tracks(multi, fps=50)
    np.testing.assert_array_equal(ds["position"], tracks["position"])
    np.testing.assert_array_equal(ds["confidence"], tracks["confidence"])


def test_npz_layout_errors_name_the_file_and_key(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, position=np.zeros((5, 2, 3)), keypoints=np.array(["a"]), fps=1.0)
    with pytest.raises(TracksError, match=r"bad.npz: keypoints: 1 names for 2 keypoints"):
        read_tracks(bad)
    np.savez(bad, position=np.zeros((5, 2, 3)), keypoints=np.array(["a", "b"]), extra=1)
    with pytest.raises(TracksError, match=r"unknown arrays \['extra'\]"):
        read_tracks(bad, fps=1)


def test_csv_long_layout(tmp_path):
    path = tmp_path / "tracks.csv"
    path.write_text(CSV)
    ds = read_tracks(path, fps=100)
    assert ds.sizes == {"time": 3, "space": 3, "keypoint": 2, "individual": 2}
    np.testing.assert_allclose(ds["time"], [0.10, 0.11, 0.12])
    np.testing.assert_allclose(
        ds["position"].sel(individual="fly1", keypoint="head")[2], [2.1, 2.2, 2.3]
    )
    assert np.isnan(ds["position"].sel(individual="fly1")[0]).all()
    assert float(ds["confidence"].sel(individual="fly0", keypoint="tail")[0]) == pytest.approx(0.8)


def test_csv_errors(tmp_path):
    path = tmp_path / "tracks.csv"
    path.write_text(CSV + "10,fly0,head,0,0,0,1\n")
    with pytest.raises(TracksError, match="duplicated rows"):
        read_tracks(path, fps=1)
    path.write_text("frame,keypoint,x\n0,a,1\n")
    with pytest.raises(TracksError, match=r"missing columns \['y'\]"):
        read_tracks(path, format="csv", fps=1)
    with pytest.raises(TracksError, match="frame rate is unknown"):
        path.write_text(CSV)
        read_tracks(path)


def test_unknown_format_lists_the_valid_ones(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(CSV)
    with pytest.raises(
        TracksError, match=r"unknown tracks format 'xyz'; valid formats: .*npz \(\.npz\)"
    ):
        read_tracks(path, format="xyz")
    odd = tmp_path / "x.weird"
    odd.write_text("hello\n")
    with pytest.raises(TracksError, match=r"cannot tell the tracks format \(unknown suffix"):
        read_tracks(odd)


def test_sniffing_finds_a_format_despite_the_suffix(tmp_path):
    path = tmp_path / "tracks.txt"
    path.write_text(CSV)
    assert read_tracks(path, fps=10).sizes["keypoint"] == 2


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such tracks file"):
        read_tracks(tmp_path / "nope.npz")


def test_the_files_frame_rate_wins_over_fps(tmp_path):
    path = tmp_path / "one.npz"
    np.savez(path, position=np.zeros((5, 2, 3)), keypoints=np.array(["a", "b"]), fps=25.0)
    with pytest.warns(UserWarning, match="records 25 fps; ignoring fps=50"):
        ds = read_tracks(path, fps=50)
    assert ds.attrs["fps"] == 25.0
    np.testing.assert_allclose(ds["time"], np.arange(5) / 25.0)
