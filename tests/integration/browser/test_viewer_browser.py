"""A viewer figure saved on its own (``fig.write_html``) in a real headless Chromium.

This is the page notebook users get from ``view(fit).write_html(...)``: plotly.py's
defaults, so the animation starts on load with plotly.js's default eased transition
(``Plotly.animate(div, null)``), which is not how the report's play buttons animate. While
it plays, the angle and RMS-error panels must keep their trajectories drawn, not only the
time cursors (plotly.js redraws, during a transition, only the traces a frame names).
Chromium and how it is driven: :mod:`tests.integration.browser.chromium`.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from pipeline.inspect import view
from pipeline.inspect.viewer.encoding import decode
from tests.integration.browser.chromium import file_page, need_browser

pytestmark = pytest.mark.slow

#: The 2D subplots: the angle panel (x, y) and the RMS-error panel (x2, y2).
PANELS = {"xy": ("angle",), "x2y2": ("rms",)}

_DRAWN = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  const out = {};
  for (const t of gd._fullData) {
    const kind = t.meta && t.meta.kinefit;
    if (t.visible !== true || !['angle', 'rms'].includes(kind)) continue;
    if (!Array.from(t.y).some(Number.isFinite)) continue;  // nothing to draw
    const g = gd.querySelector('.subplot.' + t.xaxis + t.yaxis + ' g.trace' + t.uid);
    const d = g ? Array.from(g.querySelectorAll('path.js-line'))
      .map(p => p.getAttribute('d') || '').join('') : '';
    const xs = Array.from(d.matchAll(/[ML](-?[0-9.]+),/g), m => Number(m[1]));
    const span = xs.length ? Math.max(...xs) - Math.min(...xs) : 0;
    const width = gd._fullLayout[t.xaxis.replace('x', 'xaxis')]._length;
    out[t.name] = [t.xaxis + t.yaxis, kind, span / width];
  }
  return out;
}"""


def _drawn(page) -> dict[str, tuple[str, str, float]]:
    """Visible angle and RMS traces with data: name -> (subplot, kind, drawn width).

    The width is the x extent of the trace's drawn line paths (``path.js-line``), as a
    fraction of its panel's width: 0 when nothing is drawn.
    """
    return {k: tuple(v) for k, v in page.evaluate(_DRAWN).items()}


def _panel_box(page, subplot: str) -> dict[str, float]:
    """The plot area of a 2D subplot on the page (its drag rectangle), in CSS px."""
    box = page.locator(f'.js-plotly-plot .nsewdrag[data-subplot="{subplot}"]').bounding_box()
    assert box and box["width"] > 100 and box["height"] > 100, box
    return box


def _coloured(png: bytes) -> int:
    """Pixels of a trace colour: saturated, unlike the grid, gap shading and cursor greys."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)
    return int((rgb.max(axis=-1) - rgb.min(axis=-1) > 60).sum())


@pytest.fixture(scope="module")
def saved_view(walk, tmp_path_factory):
    """``view(walk)`` written as users write it: ``write_html`` with plotly's defaults."""
    need_browser()
    path = tmp_path_factory.mktemp("viewer") / "view.html"
    fig = view(walk)
    fig.write_html(path)  # auto_play=True, plotly.js inlined
    assert "Plotly.animate(" in path.read_text()  # it plays on load
    return fig, path


def test_a_saved_view_draws_its_2d_panels_while_it_plays(saved_view, tmp_path_factory):
    fig, path = saved_view
    want = {
        t.name: t.meta["kinefit"]
        for t in fig.data
        if t.meta
        and t.meta.get("kinefit") in ("angle", "rms")
        and t.visible is not False
        and np.isfinite(decode(t.y)).any()
    }
    assert sum(k == "angle" for k in want.values()) >= 3 and "rms" in want.values()
    shots = tmp_path_factory.mktemp("screenshots")
    with file_page(tmp_path_factory.mktemp("profile")) as (page, log):
        page.goto(path.as_uri())
        page.wait_for_function(
            "() => { const gd = document.querySelector('.js-plotly-plot');"
            " return gd && gd._fullLayout && gd._fullLayout.scene"
            " && gd._fullLayout.sliders[0].active >= 2; }",  # auto-play has moved on
            timeout=60_000,
        )
        for check in range(4):  # all along the play, not just between two frames
            drawn = _drawn(page)
            page.screenshot(path=shots / f"saved_view_{check}.png")  # kept when it fails
            panels = {s: page.screenshot(clip=_panel_box(page, s)) for s in PANELS}
            for subplot, png in panels.items():
                (shots / f"saved_view_{check}_{subplot}.png").write_bytes(png)
            assert set(drawn) == set(want), set(want) ^ set(drawn)
            for name, (subplot, kind, width) in drawn.items():
                assert subplot in PANELS and kind in PANELS[subplot]
                assert width > 0.9, f"{name}: drawn over {width:.0%} of the {subplot} panel"
            for subplot, png in panels.items():
                assert _coloured(png) > 500, f"{subplot} panel blank at check {check}"
            page.wait_for_timeout(400)
        frame = page.evaluate(
            "() => document.querySelector('.js-plotly-plot')._fullLayout.sliders[0].active"
        )
        assert frame >= 3  # it kept playing meanwhile
    assert not log["errors"], log["errors"]
    assert not log["blocked"], log["blocked"]
    assert [kind for kind, _ in log["console"] if kind == "error"] == []
