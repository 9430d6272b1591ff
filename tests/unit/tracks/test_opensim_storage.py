"""OpenSim storage files (.mot/.sto), held against OpenSim's ``Storage`` and ``TimeSeriesTable``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.tracks import TracksError
from pipeline.tracks.opensim_storage import read_storage
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim", reason="OpenSim's own reader is the reference")
osim.Logger.setLevelString("error")
osim.Logger.removeFileSink()

DATA = SHARED / "data"
FILES = (
    DATA / "opensim" / "gait2392" / "subject01_walk1_ik.mot",
    DATA / "opensim" / "arm26" / "arm26_InverseKinematics.mot",
    DATA / "pose2sim" / "opensim" / "S00_P00_T01_BalancingTrial_filt_butterworth_0-100_body25b.mot",
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_columns_times_values_and_degrees_equal_opensims(path):
    ds = read_storage(path)
    table = osim.TimeSeriesTable(str(path))
    labels = list(table.getColumnLabels())
    renamed = ds.attrs["renamed_columns"]
    assert [renamed.get(c, c) for c in ds["coordinate"].values] == labels
    np.testing.assert_array_equal(ds["time"].values, np.array(table.getIndependentColumn()))
    np.testing.assert_array_equal(ds["value"].values, table.getMatrix().to_numpy())
    storage = osim.Storage(str(path))
    assert ds.attrs["in_degrees"] is bool(storage.isInDegrees())
    assert ds.sizes["time"] == storage.getSize()
    assert ds["value"].dims == ("time", "coordinate")


def test_published_files_header_dialects():
    walk = read_storage(FILES[0])  # the old SIMM header: no inDegrees, degrees
    assert walk.attrs["in_degrees"] is True and walk.attrs["in_degrees_stated"] is False
    assert walk["time"].values[0] == 0.5
    assert walk["value"].sel(coordinate="knee_angle_r").size == 211
    # OpenSim lets two force plates share labels; the later columns get _2
    assert walk.attrs["renamed_columns"]["ground_force_px_2"] == "ground_force_px"
    arm = read_storage(FILES[1])
    assert arm.attrs["in_degrees"] is True and arm.attrs["in_degrees_stated"] is True
    assert list(arm["coordinate"].values) == ["r_shoulder_elev", "r_elbow_flex"]
    assert read_storage(FILES[2])["time"].values[0] == pytest.approx(1 / 60, abs=1e-8)


def _write(tmp_path: Path, name: str, header: list[str], rows=("0\t1", "1\t2")) -> Path:
    path = tmp_path / name
    path.write_text("\n".join([*header, "time\ta", *rows]) + "\n")
    return path


def test_version_1_without_in_degrees_reads_as_opensim_does(tmp_path):
    path = _write(
        tmp_path, "v1.sto", ["Coordinates", "version=1", "nRows=2", "nColumns=2", "endheader"]
    )
    with pytest.warns(
        UserWarning,
        match=r"v1.sto: .* no 'inDegrees' line; reading rotations as "
        r"radians",
    ):
        ds = read_storage(path)
    assert ds.attrs["in_degrees"] is bool(osim.Storage(str(path)).isInDegrees()) is False
    old = _write(tmp_path, "old.mot", ["Coordinates", "nRows=2", "nColumns=2", "endheader"])
    assert read_storage(old).attrs["in_degrees"] is bool(osim.Storage(str(old)).isInDegrees())


@pytest.mark.parametrize(
    ("header", "rows", "match"),
    [
        (
            ["Coordinates", "version=1", "nRows=2", "nColumns=2", "inDegrees=yes"],
            None,
            r"bad.mot: no 'endheader' line",
        ),
        (
            ["Coordinates", "version=1", "nColumns=2", "inDegrees=yes", "endheader"],
            None,
            r"bad.mot: header has no 'nRows' field",
        ),
        (
            ["Coordinates", "version=1", "nRows=2", "inDegrees=yes", "endheader"],
            None,
            r"bad.mot: header has no 'nColumns' field",
        ),
        (
            ["Coordinates", "version=1", "nRows=3", "nColumns=2", "inDegrees=yes", "endheader"],
            None,
            r"bad.mot: header field nRows says 3 rows, the file has 2",
        ),
        (
            ["Coordinates", "version=1", "nRows=2", "nColumns=3", "inDegrees=yes", "endheader"],
            None,
            r"bad.mot: line 7: 2 column labels, header field nColumns says 3",
        ),
        (
            ["Coordinates", "version=1", "nRows=2", "nColumns=2", "inDegrees=maybe", "endheader"],
            None,
            r"bad.mot: header field 'inDegrees': 'maybe'; valid: yes, no",
        ),
        (
            ["Coordinates", "version=1", "nRows=2", "nColumns=2", "inDegrees=no", "endheader"],
            ("0\t1", "1\tx"),
            r"bad.mot: line 9: 'x' is not a number",
        ),
        (
            ["Coordinates", "version=1", "nRows=2", "nColumns=2", "inDegrees=no", "endheader"],
            ("0\t1", "1\t2\t3"),
            r"bad.mot: line 9 has 3 columns, header field nColumns says 2",
        ),
    ],
    ids=["endheader", "nRows", "nColumns", "rows", "labels", "inDegrees", "cell", "row-width"],
)
def test_bad_headers_are_one_error_naming_file_and_field(tmp_path, header, rows, match):
    path = _write(tmp_path, "bad.mot", header, rows or ("0\t1", "1\t2"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TracksError, match=match):
            read_storage(path)
