"""``kinefit ingest``'s options as documented: ``-O unit=mm``, ``--to-unit``, the format
names in ``--help``; ``kinefit body-plan show`` names the plan's unit; ingest_session
converts and fingerprints the conversion."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from flows.cli import app
from pipeline.archive.discover import SessionSource
from pipeline.archive.ingest import ingest_session
from pipeline.store import open_tracks
from pipeline.tracks.reader_registry import readers

runner = CliRunner()
CSV = "frame,keypoint,x,y,z\n0,hip,1.0,2.0,3.0\n1,hip,1.5,2.0,3.0\n"


def test_help_lists_the_formats_and_its_example_works(tmp_path):
    shown = runner.invoke(app, ["ingest", "--help"], terminal_width=200)
    assert shown.exit_code == 0
    text = " ".join(shown.output.split())
    for name in readers():
        assert name in text
    assert "-O unit=mm" in text and "--to-unit" in text
    raw = tmp_path / "walk.csv"
    raw.write_text(CSV)
    out = tmp_path / "walk.zarr"
    done = runner.invoke(
        app, ["ingest", str(raw), "-o", str(out), "--fps", "100", "-O", "unit=mm", "--to-unit", "m"]
    )
    assert done.exit_code == 0, done.output
    ds = open_tracks(out)
    assert (ds.attrs["unit"], ds.attrs["converted_from_unit"]) == ("m", "mm")
    np.testing.assert_allclose(ds.position.sel(keypoint="hip").values[:, 0, 0], [1e-3, 1.5e-3])


def test_an_unknown_option_lists_the_valid_ones(tmp_path):
    raw = tmp_path / "walk.csv"
    raw.write_text(CSV)
    done = runner.invoke(
        app, ["ingest", str(raw), "-o", str(tmp_path / "w.zarr"), "-O", "units=mm"]
    )
    assert done.exit_code == 1
    assert "valid options: keypoint_map, session, unit, up_axis" in " ".join(done.output.split())


def test_converting_pixels_fails_in_one_line(tmp_path):
    raw = tmp_path / "walk.csv"
    raw.write_text(CSV)
    args = ["ingest", str(raw), "-o", str(tmp_path / "w.zarr"), "--fps", "9", "-O", "unit=px"]
    done = runner.invoke(app, [*args, "--to-unit", "m"])
    assert done.exit_code == 1 and "image pixels have no length" in " ".join(done.output.split())


def test_body_plan_show_names_the_unit():
    done = runner.invoke(app, ["body-plan", "show", "mannequin"], terminal_width=200)
    assert done.exit_code == 0 and "length unit: m" in done.output


def test_ingest_session_converts_and_reingests_when_the_unit_changes(tmp_path):
    raw = tmp_path / "walk.csv"
    raw.write_text(CSV)
    source = SessionSource("walk", str(raw), fps=100.0, options={"unit": "cm"})
    out = tmp_path / "walk.zarr"
    first = ingest_session(source, out, to_unit="mm")
    assert not first.skipped and open_tracks(out).attrs["unit"] == "mm"
    np.testing.assert_allclose(open_tracks(out).position.values[0, :, 0, 0], [10, 20, 30])
    assert ingest_session(source, out, to_unit="mm").skipped
    assert not ingest_session(source, out, to_unit="m").skipped
    assert open_tracks(out).attrs["unit"] == "m"
    assert not ingest_session(source, out).skipped  # no conversion: a different store
    assert open_tracks(out).attrs["unit"] == "cm"


def test_an_archives_reader_options_may_ask_for_the_conversion(tmp_path):
    raw = tmp_path / "walk.csv"
    raw.write_text(CSV)
    source = SessionSource("walk", str(raw), fps=100.0, options={"unit": "cm", "to_unit": "m"})
    ingest_session(source, tmp_path / "walk.zarr")
    ds = open_tracks(tmp_path / "walk.zarr")
    assert ds.attrs["unit"] == "m"
    np.testing.assert_allclose(ds.position.values[0, :, 0, 0], [0.01, 0.02, 0.03])
