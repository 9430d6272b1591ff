"""Reader options: explicit read() signatures, options listed from them, shared options
(unit, up_axis, session, keypoint_map) applied once by the registry, units one spelling."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.reader_registry import SHARED_OPTIONS, reader_options, readers, valid_options

CSV = "frame,keypoint,x,y,z\n0,hip,1.0,2.0,3.0\n0,knee,1.5,1.0,3.0\n1,hip,1.1,2.0,3.0\n"


def write_csv(folder: Path) -> Path:
    path = folder / "t.csv"
    path.write_text(CSV)
    return path


def write_npz(folder: Path, **scalars) -> Path:
    path = folder / "t.npz"
    position = np.arange(2 * 2 * 3, dtype=np.float32).reshape(2, 2, 3)
    np.savez(path, position=position, keypoints=np.array(["hip", "knee"]), **scalars)
    return path


@pytest.mark.parametrize("fmt", list(readers()))
def test_every_read_takes_the_path_then_explicit_keyword_options(fmt):
    parameters = list(inspect.signature(readers()[fmt].read).parameters.values())
    assert parameters[0].name == "path"
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for p in parameters[1:]:
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, (fmt, p.name)  # no **options
        assert p.default is not inspect.Parameter.empty, (fmt, p.name)
    assert not set(reader_options(readers()[fmt])) & set(SHARED_OPTIONS)  # applied once


def test_unknown_option_lists_the_readers_own_and_the_shared_ones(tmp_path):
    path = tmp_path / "pose.csv"
    path.write_text("nose_x,nose_y,nose_z,nose_score,fnum\n1,2,3,0.9,0\n")
    valid = "individual, keypoint_map, session, undo_alignment, unit, up_axis"
    with pytest.raises(
        TracksError,
        match=rf"pose.csv: the anipose reader has no option\(s\) \['units'\]; "
        rf"valid options: {valid}$",
    ):
        read_tracks(path, fps=30, units="mm")
    assert valid_options(readers()["anipose"]) == tuple(valid.split(", "))


def test_every_reader_takes_unit_the_help_example_included(tmp_path):
    ds = read_tracks(write_csv(tmp_path), fps=25, unit="mm")  # kinefit ingest -O unit=mm
    assert ds.attrs["unit"] == "mm"
    assert read_tracks(write_csv(tmp_path), fps=25).attrs["unit"] == "unknown"


def test_units_are_spelled_one_way(tmp_path):
    for given, spelled in (("pixels", "px"), ("Millimeters", "mm"), ("metre", "m")):
        ds = read_tracks(write_npz(tmp_path, unit=given), fps=10)
        assert ds.attrs["unit"] == spelled
    assert read_tracks(write_npz(tmp_path), fps=10).attrs["unit"] == "unknown"


def test_a_unit_that_relabels_the_files_own_warns_naming_both(tmp_path):
    path = write_npz(tmp_path, unit="mm")
    with pytest.warns(UserWarning, match=r"records unit 'mm'; recording unit='m' as given"):
        ds = read_tracks(path, fps=10, unit="m")
    assert ds.attrs["unit"] == "m"
    np.testing.assert_array_equal(ds.position.values, read_tracks(path, fps=10).position.values)


def test_up_axis_and_session_are_recorded_and_checked(tmp_path):
    ds = read_tracks(write_csv(tmp_path), fps=25, up_axis="-z", session="walk1")
    assert (ds.attrs["up_axis"], ds.attrs["session"]) == ("-z", "walk1")
    with pytest.raises(TracksError, match=r"option 'up_axis': 'up' is not one of x, y, z"):
        read_tracks(write_csv(tmp_path), fps=25, up_axis="up")


def test_keypoint_map_renames_once_and_is_recorded(tmp_path):
    keymap = tmp_path / "map.yaml"
    keymap.write_text("keypoints:\n  hip: pelvis\n")
    for given in ({"hip": "pelvis"}, keymap):
        ds = read_tracks(write_csv(tmp_path), fps=25, keypoint_map=given)
        assert list(ds.keypoint.values) == ["pelvis", "knee"]
        assert ds.attrs["keypoint_map"] == {"hip": "pelvis"}
    with pytest.raises(TracksError, match=r"t.csv: keypoint map names keypoint\(s\) \['ankle'\]"):
        read_tracks(write_csv(tmp_path), fps=25, keypoint_map={"ankle": "foot"})
    with pytest.raises(TracksError, match=r"map.yaml\): keypoint map gives several"):
        keymap.write_text("hip: knee\n")
        read_tracks(write_csv(tmp_path), fps=25, keypoint_map=keymap)


def test_to_unit_converts_lengths(tmp_path):
    path = write_npz(tmp_path, unit="mm")
    mm = read_tracks(path, fps=10)
    m = read_tracks(path, fps=10, to_unit="m")
    np.testing.assert_allclose(m.position.values, mm.position.values / 1000, rtol=1e-6)
    assert (m.attrs["unit"], m.attrs["converted_from_unit"]) == ("m", "mm")
    inches = read_tracks(write_csv(tmp_path), fps=25, unit="in", to_unit="cm")
    np.testing.assert_allclose(
        inches.position.sel(keypoint="hip").values[0, :, 0], [2.54, 5.08, 7.62]
    )


def test_to_unit_refuses_pixels_and_unknown_units(tmp_path):
    with pytest.raises(TracksError, match=r"cannot convert tracks in 'px' to 'm': image pixels"):
        read_tracks(write_npz(tmp_path, unit="pixels"), fps=10, to_unit="m")
    with pytest.raises(TracksError, match=r"in 'unknown' to 'mm'.*pass the reader option unit="):
        read_tracks(write_csv(tmp_path), fps=25, to_unit="mm")
    with pytest.raises(TracksError, match=r"cannot convert to unit 'parsec'; convertible units"):
        read_tracks(write_csv(tmp_path), fps=25, unit="m", to_unit="parsec")


def test_the_cli_lists_the_registrys_format_names():
    from flows.cli.app import FORMAT_NAMES

    assert tuple(readers()) == FORMAT_NAMES


def test_reading_real_formats_is_quiet(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_tracks(write_csv(tmp_path), fps=25, unit="mm", to_unit="m")
