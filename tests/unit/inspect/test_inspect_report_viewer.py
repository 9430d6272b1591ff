"""The report's viewer, its links, the scientists' additions, and the truth of synthetic fits."""

import base64
import gzip
import re

import numpy as np
import pytest
import xarray as xr
from plotly.offline import get_plotlyjs

from pipeline.bodyplan import mannequin
from pipeline.errors import InspectError
from pipeline.inspect import (
    open_truth,
    session_report_html,
    truth_errors,
    worst_frames,
    write_archive_report,
)
from pipeline.inspect.data.truth import truth_joint_errors
from pipeline.inspect.report.sections import LIMIT_ACTIVE_MEANING, NOT_CONVERGED_MEANING
from pipeline.store import write_tracks
from pipeline.synth import SynthConfig, synthesize
from tests.unit.inspect.test_inspect_report import parse


@pytest.fixture(scope="module")
def archive_page(fits_root, tmp_path_factory):
    out = write_archive_report(fits_root, tmp_path_factory.mktemp("r") / "a.html", worst=12)
    return out.read_text(encoding="utf-8"), parse(out)


@pytest.mark.slow
def test_plotly_is_embedded_once_for_every_viewer(archive_page):
    text, page = archive_page
    assert text.count("Plotly.newPlot(") == 2  # two detailed sessions, one viewer each
    assert text.count("kinefitPlotlyReady.then(") == 2  # each drawn once plotly is unpacked
    (packed,) = re.findall(
        r'<script id="kinefit-plotly" type="application/gzip;base64">(.*?)<', text
    )
    assert gzip.decompress(base64.b64decode(packed)).decode() == get_plotlyjs()
    assert len(packed) < 0.45 * len(get_plotlyjs())
    assert len(page.scripts) == 5  # plotly (data), its loader, the seek helper, two figures
    assert "cdn.plot.ly" not in text.replace(packed, "")  # no CDN reference


@pytest.mark.slow
def test_worst_frames_link_to_their_frame_in_the_viewer(archive_page, walk):
    text, page = archive_page
    links = re.findall(r"kinefitSeek\('([^']+)', (\d+)\)", text)
    assert len(links) >= 12 + 10  # the archive's top 12 and each session's top 10
    for div, frame in links:
        assert div in page.ids
        match = re.search(rf'Plotly.newPlot\(\s*"{div}",.*?"frames":\s*(\[[0-9, ]*\])', text, re.S)
        assert match and int(frame) in eval(match.group(1))  # the linked frame is animated
    top = worst_frames(walk, 10)
    walk_links = [int(f) for d, f in links if d == "session-walk-viewer-plot"]
    assert set(top["frame"]) <= set(walk_links)


@pytest.mark.slow
def test_meanings_stand_next_to_their_numbers(archive_page):
    _, page = archive_page
    body = page.body
    for meaning in (NOT_CONVERGED_MEANING, LIMIT_ACTIVE_MEANING):
        assert body.count(meaning) == 3  # the archive summary and each session's
    summary = body.index("not converged (of frames)")
    assert body.index(NOT_CONVERGED_MEANING, summary) - summary < 400


@pytest.mark.slow
def test_wide_tables_scroll_in_their_box_and_long_cells_wrap(archive_page):
    text, _ = archive_page
    assert text.count('<div class="wide"><table>') == text.count("<table>\n<thead>")
    assert "td { overflow-wrap: anywhere;" in text


@pytest.mark.slow
def test_angle_trajectories_have_names_and_units(archive_page):
    _, page = archive_page
    alts = [i["alt"] for i in page.images]
    assert "plot_angle_trajectories of session-walk" in alts
    assert "angle distributions" in alts


def _walk_truth():
    """The fixture's walk session regenerated: same plan, config and seed (tests/fixtures)."""
    noisy = SynthConfig(n_frames=200, n_individuals=2, noise=0.004, dropout=0.03, outliers=0.01)
    return synthesize(mannequin(), noisy, np.random.default_rng(8), session="walk").truth


def test_truth_errors_against_known_answers(walk):
    truth = _walk_truth()
    errors = truth_errors(walk, truth)
    assert list(errors.index) == ["individual_0", "individual_1"]
    assert (errors["keypoint_rms"] < 0.2).all() and (errors["angle_rms"] < 30).all()  # same session
    # a fit that is the truth has no error; one moved by 1 cm has exactly that
    exact = walk.load().copy()
    exact["fitted_position"] = truth["position"].astype("float32").assign_coords(time=exact["time"])
    exact["dof_value"] = truth["dof_value"].assign_coords(time=exact["time"]) + 2 * np.pi
    exact["root_position"] = truth["root_position"].assign_coords(time=exact["time"])
    zero = truth_errors(exact, truth)
    assert zero["keypoint_rms"].max() < 1e-6 and zero["angle_max"].max() < 1e-9
    assert zero["root_rms"].max() == 0
    moved = exact.assign(fitted_position=exact["fitted_position"] + np.float32(0.01) / np.sqrt(3))
    np.testing.assert_allclose(truth_errors(moved, truth)["keypoint_rms"], 0.01, rtol=1e-4)
    joints = truth_joint_errors(exact, truth)
    assert joints.loc["knee_l/0", "unit"] == "deg" and joints["rms"].max() < 1e-9
    with pytest.raises(InspectError, match="truth has 200 frames, the fit walk 50"):
        truth_errors(walk.isel(time=slice(0, 50)), truth)


@pytest.mark.slow
def test_session_report_shows_the_error_against_the_truth(walk):
    part = walk.isel(time=slice(0, 40))
    page = session_report_html(part, truth=None)
    assert "Against the known truth" not in page
    page = session_report_html(part, truth=_walk_truth().isel(time=slice(0, 40)))
    assert 'id="truth"' in page and "angle RMS (deg)" in page
    assert "DOFs with the largest RMS error against the truth" in page


def test_truth_is_found_beside_the_raw_file(tmp_path, rng):
    session = synthesize(mannequin(), SynthConfig(n_frames=20), rng, session="s1")
    raw = tmp_path / "archive" / "s1.nc"
    raw.parent.mkdir()
    raw.write_bytes(b"")  # the raw file itself is not read
    (tmp_path / "archive" / "truth").mkdir()
    session.truth.to_netcdf(tmp_path / "archive" / "truth" / "s1.nc")
    tracks = write_tracks(
        session.tracks.assign_attrs(source_file=str(raw)), tmp_path / "tracks" / "s1.zarr"
    )
    fit = xr.Dataset(attrs={"tracks_store": str(tracks), "session": "s1"})
    truth = open_truth(fit)
    assert truth is not None and truth.sizes["time"] == 20
    np.testing.assert_array_equal(truth["dof_value"].values, session.truth["dof_value"].values)
    assert open_truth(xr.Dataset(attrs={"tracks_store": str(tmp_path / "gone.zarr")})) is None
    assert open_truth(xr.Dataset()) is None
