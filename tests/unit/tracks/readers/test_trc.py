"""OpenSim ``.trc`` markers, held against OpenSim's own reader (``TimeSeriesTableVec3``)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.reader_registry import pick_reader
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim", reason="OpenSim's own reader is the reference")
osim.Logger.setLevelString("error")
osim.Logger.removeFileSink()

OPENSIM = SHARED / "data" / "opensim"
POSE2SIM = SHARED / "data" / "pose2sim"
FILES = (
    OPENSIM / "gait2392" / "subject01_static.trc",
    OPENSIM / "gait2392" / "subject01_walk1.trc",
    OPENSIM / "arm26" / "arm26_elbow_flex.trc",
    OPENSIM / "arm26" / "arm26_elbow_flex.reference-run.trc",
    POSE2SIM / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100.trc",
    POSE2SIM / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100_filt_butterworth.trc",
)
WALK = FILES[1]


def opensim_markers(path: Path) -> tuple[list[str], np.ndarray, np.ndarray, dict]:
    """OpenSim's reading: names, times, positions ``(time, 3, marker)``, metadata."""
    table = osim.TimeSeriesTableVec3(str(path))
    flat = table.flatten()
    values = flat.getMatrix().to_numpy()  # (time, 3 * marker)
    names = list(table.getColumnLabels())
    times = np.array(table.getIndependentColumn())
    meta = {k: table.getTableMetaDataAsString(k) for k in ("DataRate", "Units")}
    return names, times, values.reshape(len(times), len(names), 3).transpose(0, 2, 1), meta


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_markers_times_and_values_equal_opensims(path):
    names, times, xyz, meta = opensim_markers(path)
    ds = read_tracks(path)
    assert pick_reader(path).FORMAT == "trc"
    assert list(ds["keypoint"].values) == names
    np.testing.assert_array_equal(ds["time"].values, times)
    ours = ds["position"].values[..., 0]
    np.testing.assert_array_equal(ours, xyz.astype(np.float32))  # stored as float32
    assert ds.attrs["unit"] == meta["Units"]
    assert ds.attrs["fps"] == float(meta["DataRate"])
    assert ds.sizes["individual"] == 1 and ds.sizes["space"] == 3


def test_units_and_file_times(tmp_path):
    assert read_tracks(FILES[0]).attrs["unit"] == "mm"
    pose2sim = read_tracks(FILES[4])
    assert pose2sim.attrs["unit"] == "m"
    # Pose2Sim's first row is at 1/60 s: the store keeps the file's times
    assert pose2sim["time"].values[0] == pytest.approx(1 / 60)
    assert pose2sim.attrs["first_frame"] == 1


def _blank(path: Path, out: Path, cells: list[tuple[int, int]]) -> Path:
    """Copy a .trc emptying (data row, column) cells."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if i > 4 and line.strip())
    for row, column in cells:
        cells_ = lines[start + row].split("\t")
        cells_[column] = ""
        lines[start + row] = "\t".join(cells_)
    out.write_text("\n".join(lines) + "\n")
    return out


def test_empty_cells_are_nan_where_opensim_has_nan(tmp_path):
    # marker 1 missing in rows 3-5, the last marker missing in row 0 (trailing cells)
    n = 41
    cells = [(r, c) for r in (3, 4, 5) for c in (2, 3, 4)]
    cells += [(0, c) for c in (2 + 3 * (n - 1), 3 + 3 * (n - 1), 4 + 3 * (n - 1))]
    path = _blank(WALK, tmp_path / "gaps.trc", cells)
    names, _, xyz, _ = opensim_markers(path)
    ds = read_tracks(path)
    ours = ds["position"].values[..., 0]
    assert np.isnan(xyz).sum() == 12
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(xyz))
    np.testing.assert_array_equal(ours, xyz.astype(np.float32))


def test_sniffed_by_content_without_the_suffix(tmp_path):
    copy = tmp_path / "walk.txt"
    shutil.copy(WALK, copy)
    assert pick_reader(copy).FORMAT == "trc"
    assert read_tracks(copy).sizes["keypoint"] == 41


def _edit_line(path: Path, out: Path, number: int, edit) -> Path:
    lines = path.read_text().splitlines()
    lines[number - 1] = edit(lines[number - 1])
    out.write_text("\n".join(lines) + "\n")
    return out


def test_a_row_with_a_wrong_column_count_names_line_and_counts(tmp_path):
    bad = _edit_line(WALK, tmp_path / "short.trc", 10, lambda s: s.rstrip("\t").rsplit("\t", 1)[0])
    with pytest.raises(
        TracksError,
        match=r"short.trc: line 10 \(frame 4\) has 124 columns, "
        r"the header says 125",
    ):
        read_tracks(bad)


def test_no_units_is_an_error_naming_the_field(tmp_path):
    def drop_units(path, out):
        lines = path.read_text().splitlines()
        names, values = lines[1].split("\t"), lines[2].split("\t")
        k = names.index("Units")
        lines[1] = "\t".join(names[:k] + names[k + 1 :])
        lines[2] = "\t".join(values[:k] + values[k + 1 :])
        out.write_text("\n".join(lines) + "\n")
        return out

    bad = drop_units(WALK, tmp_path / "nounits.trc")
    with pytest.raises(TracksError, match=r"nounits.trc: header .* has no Units field"):
        read_tracks(bad)
    furlong = _edit_line(WALK, tmp_path / "furlong.trc", 3, lambda s: s.replace("mm", "furlong"))
    with pytest.raises(TracksError, match=r"header field 'Units': 'furlong' is not a length"):
        read_tracks(furlong)


def test_num_markers_and_num_frames_are_checked(tmp_path):
    names = _edit_line(WALK, tmp_path / "m.trc", 3, lambda s: s.replace("\t41\t", "\t40\t"))
    with pytest.raises(TracksError, match=r"'NumMarkers' is 40 but line 4 names 41 markers"):
        read_tracks(names)
    lines = WALK.read_text().splitlines()
    (tmp_path / "cut.trc").write_text("\n".join(lines[:-3]) + "\n")
    with pytest.raises(TracksError, match=r"'NumFrames' is 151 but the file has 148 data rows"):
        read_tracks(tmp_path / "cut.trc")


def test_cli_ingests_a_trc_with_no_option_and_refuses_it_as_csv(tmp_path):
    out = tmp_path / "walk.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = CliRunner().invoke(app, ["ingest", str(WALK), "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "151 frames at 60 fps, 41 keypoints" in ok.output
    wrong = tmp_path / "wrong.zarr"
    bad = CliRunner().invoke(app, ["ingest", str(WALK), "-o", str(wrong), "--format", "csv"])
    assert bad.exit_code == 1, bad.output
    assert "internal error" not in bad.output
    assert "not a long-layout keypoint CSV: missing columns" in bad.output
    assert "subject01_walk1.trc" in bad.output
    assert not wrong.exists()
    short = _edit_line(
        WALK, tmp_path / "short.trc", 10, lambda s: s.rstrip("\t").rsplit("\t", 1)[0]
    )
    bad = CliRunner().invoke(app, ["ingest", str(short), "-o", str(wrong)])
    assert bad.exit_code == 1 and "line 10 (frame 4) has 124 columns" in bad.output
    assert not wrong.exists()
