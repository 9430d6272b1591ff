"""`kinefit report`, through the real CLI app."""

import pytest
import zarr
from typer.testing import CliRunner

from flows.cli import app as kinefit_app


@pytest.fixture(scope="module")
def app():
    return kinefit_app


def run(app, *args):
    return CliRunner().invoke(app, ["report", *map(str, args)])


def test_report_of_one_fit_store(archive_copy):
    fits = archive_copy / "fits"
    result = run(kinefit_app, fits / "lab_b" / "hop.zarr")
    assert result.exit_code == 0, result.output
    out = fits / "lab_b" / "hop.report.html"
    assert out.is_file() and "wrote session report" in result.output
    assert "</html>" in out.read_text()


def test_report_of_a_fits_folder_with_out(fits_root, tmp_path):
    out = tmp_path / "site" / "index.html"
    result = run(kinefit_app, fits_root, "--out", out, "--detailed", 0, "--worst", 3)
    assert result.exit_code == 0, result.output
    assert "archive report of 2 session(s)" in result.output
    text = out.read_text()
    assert "Worst frames (top 3 across sessions)" in text and 'id="session-walk"' not in text


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing.zarr", "missing.zarr: no such fit store or folder"),
        ("tracks/walk.zarr", "walk.zarr: a zarr store but not a kinefit fit store"),
        ("tracks", "tracks: no complete fit stores found"),
    ],
)
def test_report_errors_are_one_line_and_exit_1(app, archive_root, target, message):
    result = run(app, archive_root / target)
    assert result.exit_code == 1
    assert "error:" in result.output and message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_report_help(app):
    result = CliRunner().invoke(app, ["report", "--help"])
    assert result.exit_code == 0 and "--out" in result.output and "self-contained" in result.output


def test_report_of_a_folder_of_unusable_fits_says_why(app, archive_copy):
    fits = archive_copy / "fits"
    zarr.open_group(fits / "walk.zarr", mode="r+").attrs["complete"] = False
    result = run(app, fits / "walk.zarr")
    assert result.exit_code == 1 and "incomplete" in result.output
    (fits / "lab_b" / "hop.zarr").rename(fits / "lab_b" / ".hop.zarr.partial")
    result = run(app, fits)
    message = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "no complete fit stores found (2 unusable:" in message
