"""Building blocks of a self-contained HTML page: inline CSS, escaped tables, figures.

Nothing here refers to the network: static figures are embedded as base64 PNG data URIs,
the style sheet is inline, and interactive (plotly) figures are written as their JSON
plus one copy of plotly's JavaScript in the page head, however many figures there are.
That copy is gzipped (base64, 2.0 MB instead of 4.8 MB) and unpacked by the browser's own
``DecompressionStream`` (Chrome 80, Firefox 113, Safari 16.4 and later); each figure is
drawn once it is unpacked.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import math
from collections.abc import Callable, Mapping
from html import escape
from typing import Any

import pandas as pd
import plotly.io as pio
from matplotlib.figure import Figure
from plotly.offline import get_plotlyjs

from pipeline.inspect.plots.figures import figure_png

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 0 auto; max-width: 1300px; padding: 1em 2em; color: #222; line-height: 1.4; }
h1 { border-bottom: 2px solid #3182bd; padding-bottom: .2em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; }
h3 { margin-top: 1.4em; }
nav { background: #f4f7fb; padding: .5em 1em; border-radius: 4px; }
nav a { margin-right: 1.2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; min-width: 4em; }
.wide { max-width: 100%; overflow-x: auto; }
th { background: #eef2f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: .9em; word-break: break-all; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #555; }
.note { color: #8a6d3b; background: #fcf8e3; padding: .4em .8em; border-radius: 4px; }
.muted { color: #777; }
.meaning { font-size: .85em; color: #555; }
.viewer { border: 1px solid #eee; min-height: 300px; }
"""

#: Unpacks the embedded plotly.js (a gzip in a data block) and runs it; figures wait on it.
LOADER_JS = """
window.kinefitPlotlyReady = (async function () {
  const packed = document.getElementById("kinefit-plotly").textContent.trim();
  const bytes = Uint8Array.from(atob(packed), function (c) { return c.charCodeAt(0); });
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  (0, eval)(await new Response(stream).text());
  return window.Plotly;
})();
window.kinefitPlotlyReady.catch(function (err) {
  document.querySelectorAll(".viewer").forEach(function (el) {
    el.textContent = "The interactive viewer needs a browser that unpacks gzip itself "
      + "(DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later): " + err;
  });
});
"""
#: Moves a viewer (by its div id) to a frame (by name) and scrolls to it; used by links.
#: plotly.js can lose the request to a slider animation still in flight (a busy machine
#: draws late): 200 ms after each try the drawn frame (``_currentFrame``) and the slider
#: are read back. Still the frame shown before the link (the request was lost, nothing else
#: moved the viewer since: no play, no drag), it is asked for again, up to 10 tries; a
#: slider left behind is moved to it.
#: A play or pause button pressed or the slider grabbed after the link ends the seek: a
#: pending read-back must not pull the viewer back or relayout it while the user's own
#: animation runs (it once stopped a play started right after a link).
#: ``kinefitFollow`` (run on every figure once drawn): plotly.js can leave a slider marked
#: as being dragged after a click on its rail on a busy page (its mouse-up clears the mark
#: on another copy of the slider's state), and a slider so marked no longer follows play
#: or links (CI 12-06 and 12-07: the frame shown stuck at a link's frame while the 3D scene
#: played on). The mark is cleared once a slider drag has ended, and by a link.
SEEK_JS = """
function kinefitUndrag(gd) {
  var l = gd._fullLayout;
  ((l && l.sliders) || []).forEach(function (s) { s._dragging = false; });
}
function kinefitFollow(id) {
  var gd = document.getElementById(id);
  if (!gd || !gd.on || gd._kinefitFollows) { return; }
  gd._kinefitFollows = true;
  gd.on("plotly_sliderend", function () {
    setTimeout(function () { kinefitUndrag(gd); }, 0);
  });
}
function kinefitSeek(id, frame) {
  var gd = document.getElementById(id);
  if (!gd || !window.Plotly) { return true; }
  kinefitUndrag(gd);
  gd.scrollIntoView({block: "center"});
  var name = String(frame), tries = 0;
  var before = gd._fullLayout && gd._fullLayout._currentFrame, token = {};
  gd._kinefitSeek = token;
  if (!gd._kinefitSeekHooked && gd.on) {
    gd._kinefitSeekHooked = true;
    ["plotly_buttonclicked", "plotly_sliderstart"].forEach(function (event) {
      gd.on(event, function () { gd._kinefitSeek = null; });
    });
  }
  function step(s) {
    for (var k = 0; k < s.steps.length; k++) {
      if (String(s.steps[k].args[0][0]) === name) { return k; }
    }
    return -1;
  }
  function check() {
    if (gd._kinefitSeek !== token) { return; }
    var l = gd._fullLayout, s = l && l.sliders && l.sliders[0], k = s ? step(s) : -1;
    if (l && l._currentFrame !== undefined && l._currentFrame !== name) {
      if (l._currentFrame === before && tries < 10) { go(); }
    } else if (k >= 0 && s.active !== k) {
      Plotly.relayout(gd, {"sliders[0].active": k});
    }
  }
  function go() {
    if (gd._kinefitSeek !== token) { return; }
    tries += 1;
    Promise.resolve(Plotly.animate(gd, [name], {mode: "immediate",
      frame: {duration: 0, redraw: true}, transition: {duration: 0}}))
      .catch(function () {})
      .then(function () { setTimeout(check, 200); });
  }
  go();
  return false;
}
"""
#: plotly's options for every interactive figure (no logo linking to plotly's site).
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False}


def page(title: str, body: str, *, interactive: bool = False) -> str:
    """A complete HTML5 document with the inline style sheet.

    Parameters
    ----------
    title, body : str
    interactive : bool
        Embed plotly's JavaScript (once, gzipped, in the head: :func:`packed_plotlyjs`) for
        the :func:`plotly_figure` s of ``body``, and the frame-seeking helper of
        :func:`seek_link`.
    """
    scripts = ""
    if interactive:
        scripts = (
            f'<script id="kinefit-plotly" type="application/gzip;base64">{packed_plotlyjs()}'
            f"</script>\n<script>{LOADER_JS}</script>\n<script>{SEEK_JS}</script>\n"
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n{scripts}</head>\n"
        f"<body>\n<h1>{escape(title)}</h1>\n{body}\n</body>\n</html>\n"
    )


@functools.cache
def packed_plotlyjs() -> str:
    """plotly.js (the version plotly.py ships), gzipped and base64-encoded."""
    data = gzip.compress(get_plotlyjs().encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(data).decode("ascii")


def plotly_figure(fig: Any, div_id: str, caption: str) -> str:
    """An interactive plotly figure: its JSON and the call drawing it (no library).

    ``fig`` is a plotly Figure or a figure dict (written as it is, unvalidated). The page
    must be made with ``page(..., interactive=True)``. Animations do not start on their
    own.
    """
    div = pio.to_html(
        fig,
        validate=False,
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        auto_play=False,
        div_id=div_id,
        config=PLOTLY_CONFIG,
        default_width="100%",
        post_script="window.kinefitFollow && kinefitFollow('{plot_id}');",
    )
    start, end = div.index("<script>") + len("<script>"), div.rindex("</script>")
    div = (  # drawn once the embedded plotly.js is unpacked
        div[:start] + "kinefitPlotlyReady.then(function () {" + div[start:end] + "});" + div[end:]
    )
    return (
        f'<figure>\n<div class="viewer">{div}</div>\n'
        f"<figcaption>{escape(caption)}</figcaption>\n</figure>\n"
    )


def seek_link(div_id: str, frame: int, text: str) -> str:
    """A link that moves the viewer ``div_id`` to frame ``frame`` and scrolls to it."""
    return (
        f'<a href="#{escape(div_id)}" onclick="return kinefitSeek(\'{escape(div_id)}\', '
        f'{int(frame)})">{escape(text)}</a>'
    )


def section(anchor: str, title: str, content: str, level: int = 2) -> str:
    """A ``<section>`` with an id and a heading."""
    return (
        f'<section id="{escape(anchor)}">\n<h{level}>{escape(title)}</h{level}>\n'
        f"{content}\n</section>\n"
    )


def note(text: str) -> str:
    """A highlighted paragraph (escaped)."""
    return f'<p class="note">{escape(text)}</p>\n'


def figure(fig: Figure, caption: str, alt: str, dpi: int = 90) -> str:
    """A figure embedded as a base64 PNG with its caption."""
    data = base64.b64encode(figure_png(fig, dpi=dpi)).decode("ascii")
    return (
        f'<figure>\n<img src="data:image/png;base64,{data}" alt="{escape(alt)}">\n'
        f"<figcaption>{escape(caption)}</figcaption>\n</figure>\n"
    )


def format_value(value: Any) -> str:
    """A cell's text: 4 significant digits for floats, '—' for NaN and None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def percent(value: Any) -> str:
    """A fraction as a percentage."""
    return format_value(value) if value is None or value != value else f"{100 * value:.2f} %"


def _cell(value: Any, fmt: Callable[[Any], str] | None) -> str:
    text = fmt(value) if fmt else format_value(value)
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return f'<td class="num">{escape(text)}</td>' if numeric else f"<td>{escape(text)}</td>"


def table(
    df: pd.DataFrame,
    formats: Mapping[str, Callable[[Any], str]] | None = None,
    links: Mapping[str, str] | None = None,
    index: bool = True,
    raw: tuple[str, ...] = (),
) -> str:
    """An escaped HTML table of a DataFrame, in a box that scrolls if it is too wide.

    Parameters
    ----------
    df : pandas.DataFrame
    formats : mapping, optional
        Column -> formatter of its cells.
    links : mapping, optional
        Index value -> in-page anchor (``#...``) the index cell links to.
    index : bool
        Show the index as the first column.
    raw : tuple of str
        Columns whose cells are HTML already (links made by :func:`seek_link`).
    """
    formats = formats or {}
    head = [escape(str(df.index.name or ""))] if index else []
    head += [escape(str(c).replace("_", " ")) for c in df.columns]
    rows = []
    for key, row in df.iterrows():
        cells = []
        if index:
            label = escape(str(key))
            if links and str(key) in links:
                label = f'<a href="{escape(links[str(key)])}">{label}</a>'
            cells.append(f"<th>{label}</th>")
        cells += [
            f"<td>{row[c]}</td>" if str(c) in raw else _cell(row[c], formats.get(str(c)))
            for c in df.columns
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
    return (
        f'<div class="wide"><table>\n<thead>{header}</thead>\n<tbody>\n'
        + "\n".join(rows)
        + "\n</tbody>\n</table></div>\n"
    )


def key_values(entries: Mapping[str, Any]) -> str:
    """A two-column table; nested mappings become nested tables."""
    rows = []
    for key, value in entries.items():
        if isinstance(value, Mapping) and value:
            cell = key_values(value)
        else:
            text = escape(format_value(value))
            cell = f"<code>{text}</code>" if isinstance(value, str) and len(value) >= 32 else text
        rows.append(f"<tr><th>{escape(str(key))}</th><td>{cell}</td></tr>")
    return "<table>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>\n"
