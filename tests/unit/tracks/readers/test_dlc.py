"""DeepLabCut CSV and .h5 files written with pandas in DeepLabCut's own table layout."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.readers import dlc
from tests.fixtures.readers_interop import assert_same_tracks

SCORER = "DLC_resnet50_mouseApr1shuffle1_100000"


def single_animal_df(rng: np.random.Generator, n_frames: int = 6) -> pd.DataFrame:
    columns = pd.MultiIndex.from_product(
        [[SCORER], ["snout", "left_ear", "tailbase"], ["x", "y", "likelihood"]],
        names=["scorer", "bodyparts", "coords"],
    )
    values = rng.uniform(0, 640, (n_frames, len(columns)))
    values[:, 2::3] = rng.uniform(0, 1, (n_frames, 3))
    values[2, 3:5] = np.nan  # left_ear lost in frame 2, as DeepLabCut writes it
    return pd.DataFrame(values, columns=columns)


def multi_animal_df(rng: np.random.Generator, n_frames: int = 5, unique=True) -> pd.DataFrame:
    tuples = [
        (SCORER, ind, bp, c)
        for ind in ("mouse1", "mouse2")
        for bp in ("snout", "tailbase")
        for c in ("x", "y", "likelihood")
    ] + [(SCORER, "single", "ref_post", c) for c in ("x", "y", "likelihood") if unique]
    columns = pd.MultiIndex.from_tuples(
        tuples, names=["scorer", "individuals", "bodyparts", "coords"]
    )
    return pd.DataFrame(rng.uniform(0, 1, (n_frames, len(columns))), columns=columns)


def dlc_3d_df(rng: np.random.Generator, n_frames: int = 4) -> pd.DataFrame:
    columns = pd.MultiIndex.from_product(
        [["DLC_3D"], ["wrist", "elbow"], ["x", "y", "z"]], names=["scorer", "bodyparts", "coords"]
    )
    return pd.DataFrame(rng.normal(0, 50, (n_frames, len(columns))), columns=columns)


def expected(df: pd.DataFrame, individual, bodypart, coord) -> np.ndarray:
    key = (SCORER, bodypart, coord) if individual is None else (SCORER, individual, bodypart, coord)
    return df[key].to_numpy().astype(np.float32)


def test_single_animal_csv_is_read_value_by_value(tmp_path: Path, rng) -> None:
    df = single_animal_df(rng)
    path = tmp_path / "mouse_DLC.csv"
    df.to_csv(path)
    ds = dlc.read(path, fps=50)
    assert ds.sizes == {"time": 6, "space": 2, "keypoint": 3, "individual": 1}
    assert list(ds.keypoint.values) == ["snout", "left_ear", "tailbase"]
    for bp in ("snout", "left_ear", "tailbase"):
        for axis in ("x", "y"):
            got = ds.position.sel(keypoint=bp, space=axis).values[:, 0]
            np.testing.assert_array_equal(got, expected(df, None, bp, axis))
        conf = ds.confidence.sel(keypoint=bp).values[:, 0]
        np.testing.assert_array_equal(conf, expected(df, None, bp, "likelihood"))
    assert np.isnan(ds.position.sel(keypoint="left_ear").values[2]).all()
    np.testing.assert_allclose(ds.time.values, np.arange(6) / 50)
    assert ds.attrs["source_software"] == "DeepLabCut"
    assert ds.attrs["scorer"] == SCORER
    assert (ds.attrs["unit"], ds.attrs["up_axis"], ds.attrs["fps"]) == ("px", "-y", 50.0)


def test_multi_animal_csv_gives_individuals_and_unique_bodyparts(tmp_path: Path, rng) -> None:
    df = multi_animal_df(rng)
    path = tmp_path / "pair_DLC.csv"
    df.to_csv(path)
    ds = dlc.read(path, fps=30)
    assert list(ds.individual.values) == ["mouse1", "mouse2", "single"]
    assert list(ds.keypoint.values) == ["snout", "tailbase", "ref_post"]
    for ind in ("mouse1", "mouse2"):
        got = ds.position.sel(individual=ind, keypoint="tailbase", space="y").values
        np.testing.assert_array_equal(got, expected(df, ind, "tailbase", "y"))
        # unique bodyparts belong to the "single" individual only
        assert np.isnan(ds.position.sel(individual=ind, keypoint="ref_post").values).all()
    got = ds.confidence.sel(individual="single", keypoint="ref_post").values
    np.testing.assert_array_equal(got, expected(df, "single", "ref_post", "likelihood"))
    assert np.isnan(ds.position.sel(individual="single", keypoint="snout").values).all()


def test_dlc_3d_csv_has_xyz_no_confidence_and_unknown_unit(tmp_path: Path, rng) -> None:
    df = dlc_3d_df(rng)
    path = tmp_path / "arm_DLC_3D.csv"
    df.to_csv(path)
    ds = dlc.read(path, fps=100)
    assert list(ds.space.values) == ["x", "y", "z"]
    got = ds.position.sel(keypoint="elbow", space="z").values[:, 0]
    np.testing.assert_array_equal(got, df[("DLC_3D", "elbow", "z")].to_numpy().astype(np.float32))
    assert np.isnan(ds.confidence.values).all()
    assert ds.attrs["unit"] == "unknown" and ds.attrs["up_axis"] is None
    ds_mm = read_tracks(path, fps=100, unit="mm", up_axis="z")
    assert (ds_mm.attrs["unit"], ds_mm.attrs["up_axis"]) == ("mm", "z")


def test_frame_numbers_of_the_index_give_the_time(tmp_path: Path, rng) -> None:
    df = single_animal_df(rng)
    df.index = np.arange(100, 106)
    path = tmp_path / "late_start.csv"
    df.to_csv(path)
    ds = dlc.read(path, fps=20)
    np.testing.assert_allclose(ds.time.values, np.arange(100, 106) / 20)


def test_h5_table_reads_like_the_csv(tmp_path: Path, rng) -> None:
    pytest.importorskip("tables", reason="DeepLabCut .h5 needs PyTables: the 'dlc' extra")
    df = multi_animal_df(rng)
    df.to_csv(tmp_path / "pair.csv")
    df.to_hdf(tmp_path / "pair.h5", key="df_with_missing", format="table", mode="w")
    from_h5 = read_tracks(tmp_path / "pair.h5", fps=30)
    from_csv = read_tracks(tmp_path / "pair.csv", fps=30)
    assert from_h5.attrs["source_software"] == "DeepLabCut"
    np.testing.assert_array_equal(from_h5.position.values, from_csv.position.values)
    np.testing.assert_array_equal(from_h5.confidence.values, from_csv.confidence.values)
    got = from_h5.position.sel(individual="mouse2", keypoint="snout", space="x").values
    np.testing.assert_array_equal(got, expected(df, "mouse2", "snout", "x"))


def test_h5_without_pytables_names_the_extra(tmp_path: Path, rng, monkeypatch) -> None:
    pytest.importorskip("tables", reason="writing the .h5 needs PyTables: the 'dlc' extra")
    path = tmp_path / "pair.h5"
    multi_animal_df(rng).to_hdf(path, key="df_with_missing", format="table", mode="w")
    monkeypatch.setitem(sys.modules, "tables", None)  # as if the extra were not installed
    with pytest.raises(
        TracksError, match=r"pair\.h5: reading DeepLabCut \.h5 files needs .*kinefit\[dlc\]"
    ):
        dlc.read(path, fps=30)


def test_registry_picks_dlc_by_content(tmp_path: Path, rng) -> None:
    path = tmp_path / "any_name.csv"
    single_animal_df(rng).to_csv(path)
    assert dlc.sniff(path)
    ds = read_tracks(path, fps=25)
    assert ds.attrs["source_format"] == "dlc"


def _lines(df: pd.DataFrame, tmp_path: Path) -> list[str]:
    path = tmp_path / "orig.csv"
    df.to_csv(path)
    return path.read_text().splitlines()


def test_missing_header_row_fails_naming_it(tmp_path: Path, rng) -> None:
    lines = _lines(single_animal_df(rng), tmp_path)
    path = tmp_path / "no_coords.csv"
    path.write_text("\n".join(lines[:2] + lines[3:]) + "\n")  # drop the coords row
    with pytest.raises(
        TracksError, match=r"no_coords\.csv: header row 3 should start with 'coords'"
    ):
        dlc.read(path, fps=30)


def test_missing_scorer_row_is_not_a_dlc_table(tmp_path: Path, rng) -> None:
    lines = _lines(single_animal_df(rng), tmp_path)
    path = tmp_path / "no_scorer.csv"
    path.write_text("\n".join(lines[1:]) + "\n")
    assert not dlc.sniff(path)
    with pytest.raises(TracksError, match=r"must start with 'scorer', got 'bodyparts'"):
        dlc.read(path, fps=30)


def test_wrong_column_count_fails_naming_the_line(tmp_path: Path, rng) -> None:
    lines = _lines(single_animal_df(rng), tmp_path)
    lines[5] = lines[5].rsplit(",", 1)[0]  # one field short
    path = tmp_path / "short_row.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        TracksError, match=r"short_row\.csv: line 6 has 9 fields, the header has 10"
    ):
        dlc.read(path, fps=30)


def test_truncated_file_fails(tmp_path: Path, rng) -> None:
    text = "\n".join(_lines(single_animal_df(rng), tmp_path))
    path = tmp_path / "cut.csv"
    path.write_text(text[: len(text) - 30])
    with pytest.raises(TracksError, match=r"cut\.csv: line 9 has \d fields.*truncated"):
        dlc.read(path, fps=30)


def test_bodypart_missing_a_coord_column_fails(tmp_path: Path, rng) -> None:
    df = single_animal_df(rng).drop(columns=[(SCORER, "tailbase", "y")])
    path = tmp_path / "no_y.csv"
    df.to_csv(path)
    with pytest.raises(TracksError, match=r"bodypart 'tailbase' has coords \['likelihood', 'x'\]"):
        dlc.read(path, fps=30)


def test_non_numeric_cell_fails_naming_line_and_column(tmp_path: Path, rng) -> None:
    lines = _lines(single_animal_df(rng), tmp_path)
    cells = lines[4].split(",")
    cells[2] = "oops"
    lines[4] = ",".join(cells)
    path = tmp_path / "text.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TracksError, match=r"line 5, column 3: 'oops' is not a number"):
        dlc.read(path, fps=30)


def test_unknown_keypoint_in_the_map_fails_listing_the_files_keypoints(tmp_path, rng) -> None:
    path = tmp_path / "mouse.csv"
    single_animal_df(rng).to_csv(path)
    renamed = read_tracks(path, format="dlc", fps=30, keypoint_map={"snout": "nose"})
    assert list(renamed.keypoint.values) == ["nose", "left_ear", "tailbase"]
    with pytest.raises(TracksError, match=r"keypoint map names keypoint\(s\) \['tail'\].*snout"):
        read_tracks(path, format="dlc", fps=30, keypoint_map={"tail": "tail_base"})


def test_missing_fps_is_an_error_naming_the_file(tmp_path: Path, rng) -> None:
    path = tmp_path / "mouse.csv"
    single_animal_df(rng).to_csv(path)
    with pytest.raises(TracksError, match=r"mouse\.csv: the frame rate is unknown"):
        dlc.read(path)


def test_unknown_option_lists_the_valid_ones(tmp_path: Path, rng) -> None:
    path = tmp_path / "mouse.csv"
    single_animal_df(rng).to_csv(path)
    valid = "keypoint_map, session, unit, up_axis"
    with pytest.raises(TracksError, match=rf"no option\(s\) \['units'\]; valid options: {valid}$"):
        read_tracks(path, fps=30, units="mm")


def test_movement_loader_agrees(tmp_path: Path, rng) -> None:
    load_poses = pytest.importorskip(
        "movement.io.load_poses", reason="movement (the optional interop extra) is not installed"
    )
    df = multi_animal_df(rng, unique=False)
    path = tmp_path / "pair.csv"
    df.to_csv(path)
    assert_same_tracks(dlc.read(path, fps=30), load_poses.from_dlc_file(path, fps=30))


def test_tracklet_h5_is_sniffed_and_read_like_pandas(tmp_path: Path, rng) -> None:
    pytest.importorskip("tables", reason="DeepLabCut .h5 needs PyTables: the 'dlc' extra")
    df = multi_animal_df(rng, unique=False)
    path = tmp_path / "videoDLC_resnet50_mouseApr1shuffle1_100000_el.h5"
    df.to_hdf(path, key="tracks", format="table", mode="w")  # as DeepLabCut writes tracklets
    assert dlc.sniff(path)
    ds = read_tracks(path, fps=30)  # no --format
    assert ds.attrs["source_format"] == "dlc"
    theirs = pd.read_hdf(path, key="tracks")
    for ind in ("mouse1", "mouse2"):
        got = ds.position.sel(individual=ind, keypoint="tailbase", space="y").values
        np.testing.assert_array_equal(got, expected(theirs, ind, "tailbase", "y"))


def test_short_cells_and_empty_ones_read_like_pandas(tmp_path: Path) -> None:
    # every value at most two characters wide: the empty cells must still become NaN
    path = tmp_path / "labels.csv"
    path.write_text(
        "scorer,,,me,me,me,me\n"
        "bodyparts,,,nose,nose,tail,tail\n"
        "coords,,,x,y,x,y\n"
        "labeled-data,v,img0.png,12,40,,\n"
        "labeled-data,v,img1.png,,,7,9\n"
    )
    ds = read_tracks(path, fps=1)
    theirs = pd.read_csv(path, header=[0, 1, 2], index_col=[0, 1, 2])
    for bp in ("nose", "tail"):
        for axis in ("x", "y"):
            got = ds.position.sel(keypoint=bp, space=axis).values[:, 0]
            np.testing.assert_array_equal(got, theirs[("me", bp, axis)].to_numpy(np.float32))
