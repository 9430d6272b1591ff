"""The demo's report in a real headless Chromium: no errors, no network, a live viewer.

Chromium and how it is driven: :mod:`tests.integration.browser.chromium`.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipeline.store import open_fit
from tests.integration.browser.chromium import WIDTH, file_page, need_browser

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The demo's output folder: `kinefit demo` run for real (short sessions, no cluster)."""
    need_browser()
    out = tmp_path_factory.mktemp("demo")
    cmd = [sys.executable, "-m", "flows.cli", "demo", "--out", str(out), "--frames", "150"]
    done = subprocess.run([*cmd, "--workers", "0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "report.html").is_file()
    return out


@pytest.fixture(scope="module")
def browser(demo, tmp_path_factory):
    """The report opened in Chromium, with its console, errors and requests recorded."""
    with file_page(tmp_path_factory.mktemp("profile")) as (page, log):
        page.goto((demo / "report.html").as_uri())
        page.wait_for_function(
            "() => { const gd = document.querySelector('.js-plotly-plot');"
            " return gd && gd._fullLayout && gd._fullLayout.scene; }",
            timeout=60_000,
        )
        page.wait_for_timeout(1500)  # WebGL draws after the layout
        yield page, log


def _viewer(page):
    return page.locator(".js-plotly-plot").first


def _scene_pixels(page) -> np.ndarray:
    """Grey pixels of the viewer's 3D scene (its WebGL canvas area)."""
    _viewer(page).scroll_into_view_if_needed()
    x, y, w, h = page.evaluate(
        "() => { const gd = document.querySelector('.js-plotly-plot');"
        " const g = gd.getBoundingClientRect(), s = gd._fullLayout.scene.domain;"
        " const w = gd._fullLayout.width, h = gd._fullLayout.height;"
        " return [g.x + s.x[0] * w, g.y + (1 - s.y[1]) * h, (s.x[1] - s.x[0]) * w,"
        " (s.y[1] - s.y[0]) * h * 0.85]; }"
    )
    assert w > 200 and h > 200
    png = page.screenshot(clip={"x": x, "y": y, "width": w, "height": h})
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)


def _frame_shown(page) -> int:
    return int(
        page.evaluate(
            "() => { const gd = document.querySelector('.js-plotly-plot');"
            " const s = gd._fullLayout.sliders[0]; return s.steps[s.active].args[0][0]; }"
        )
    )


def _until_frame(page, test, timeout_s: float = 15.0) -> int:
    """The frame shown once ``test(frame)`` holds (polled: a loaded machine draws late)."""
    deadline = time.monotonic() + timeout_s
    while True:
        frame = _frame_shown(page)
        if test(frame) or time.monotonic() > deadline:
            return frame
        page.wait_for_timeout(100)


def _skeleton_now(page) -> tuple[str, list[str], np.ndarray]:
    """The drawn skeleton trace: its individual, joint labels and (P, 3) points."""
    out = page.evaluate(
        "() => { const gd = document.querySelector('.js-plotly-plot');"
        " const k = gd._fullData.findIndex(t => t.meta && t.meta.kinefit === 'skeleton');"
        " const t = gd._fullData[k];"
        " return [t.meta.individual, t.meta.joints,"
        " Array.from(t.x), Array.from(t.y), Array.from(t.z)]; }"
    )
    ind, joints, x, y, z = out
    points = np.array([x, y, z], dtype=float).T
    return ind, joints, points


def test_report_opens_without_errors_or_network(browser, demo):
    page, log = browser
    assert not log["errors"], log["errors"]
    errors = [text for kind, text in log["console"] if kind == "error"]
    assert not errors, errors
    assert not log["blocked"], log["blocked"]
    assert log["requests"] == [(demo / "report.html").as_uri()]  # the file, nothing else
    scripts = page.evaluate("() => Array.from(document.scripts).map(s => s.src)")
    assert set(scripts) == {""}  # inline only
    assert page.evaluate("() => document.querySelectorAll('.js-plotly-plot').length") == 1


def test_viewer_canvas_is_drawn_and_follows_the_slider(browser, demo, tmp_path):
    page, _ = browser
    before = _scene_pixels(page)
    Image.fromarray(before.astype(np.uint8)).save(tmp_path / "scene_before.png")
    assert before.std() > 8  # not blank: a skeleton on the scene's grid
    first = _frame_shown(page)
    rail = page.locator(".slider-rail-rect").first.bounding_box()
    page.mouse.click(rail["x"] + 0.7 * rail["width"], rail["y"] + rail["height"] / 2)
    page.wait_for_timeout(1500)
    moved = _frame_shown(page)
    assert moved > first + 20
    after = _scene_pixels(page)
    Image.fromarray(after.astype(np.uint8)).save(tmp_path / "scene_after.png")
    assert after.std() > 8
    assert np.abs(after - before).mean() > 0.5  # the skeleton moved on screen
    # what the browser draws at that frame is the fit store's fitted_position
    ind, joints, points = _skeleton_now(page)
    session = page.evaluate("() => document.querySelector('.js-plotly-plot').closest('section').id")
    name = re.sub(r"^session-|-viewer$", "", session)
    fit = open_fit(demo / "fits" / f"{name}.zarr")
    want = fit["fitted_position"].sel(individual=ind).isel(time=moved)
    want = want.transpose("keypoint", "space").values
    names = [str(k) for k in fit["keypoint"].values]
    drawn = np.array([p for p, j in zip(points, joints, strict=True) if j])
    expected = np.array([want[names.index(j)] for j in joints if j], dtype=np.float32)
    np.testing.assert_array_equal(drawn.astype(np.float32), expected)


def test_worst_frame_links_and_play_move_the_viewer(browser):
    page, log = browser
    # what plotly.js leaves on a busy machine after a click on the slider's rail (its
    # mouse-up clears another copy of the mark): a slider marked as dragged follows neither
    # links nor play (CI 12-06 and 12-07: the shown frame stuck at the link's frame)
    page.evaluate(
        "() => { document.querySelector('.js-plotly-plot')._fullLayout.sliders[0]"
        "._dragging = true; }"
    )
    link = page.locator("a", has_text="show in viewer").first
    target = int(re.search(r", (\d+)\)", link.get_attribute("onclick")).group(1))
    link.click()
    assert _until_frame(page, lambda f: f == target) == target
    page.locator(".updatemenu-button", has_text="▶ 4×").click()
    assert _until_frame(page, lambda f: f != target) != target  # it plays on from there
    page.locator(".updatemenu-button", has_text="pause").click()
    assert not log["errors"] and not log["blocked"]


def test_page_fits_a_1400_px_window(browser):
    page, _ = browser
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= WIDTH, f"the page is {width} px wide in a {WIDTH} px window"
    text = page.evaluate("() => document.body.innerText")
    assert "Not converged: the share of frames" in text and "Against the known truth" in text
