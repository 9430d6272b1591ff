"""``kinefit render``: a fit drawn onto its video, or a 3D animation of it, as MP4.

Mounted in the main app as ``app.command("render")(render)``. With ``--video`` it calls
:func:`pipeline.inspect.render_overlay` (through ``--camera NAME`` of ``--calibration F``
for 3D fits; single-view 2D fits in pixels need neither); without, it calls
:func:`pipeline.inspect.render_animation`. Errors print one line and exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import Verbose, guard
from flows.cli.output import q, say

__all__ = ["render"]


def render(
    fit: Annotated[Path, typer.Argument(help="A fit store (FIT.zarr).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="MP4 file to write.")],
    video: Annotated[
        Path | None,
        typer.Option(help="The session's video: draw the fit onto it (else a 3D animation)."),
    ] = None,
    camera: Annotated[
        str | None, typer.Option(help="The video's camera, by name in --calibration.")
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="Calibration file (Anipose/Pose2Sim TOML, OpenCV YAML/JSON)."),
    ] = None,
    offset: Annotated[
        int, typer.Option(min=0, help="Video frame of the session's first frame.")
    ] = 0,
    step: Annotated[int, typer.Option(min=1, help="Animation: every STEP-th frame.")] = 1,
    width: Annotated[int, typer.Option(min=16, max=7680, help="Animation width (px).")] = 960,
    height: Annotated[int, typer.Option(min=16, max=4320, help="Animation height (px).")] = 720,
    verbose: Verbose = False,
) -> None:
    """Render a fit to MP4: over the source video (--video), or as a 3D animation."""
    with guard(verbose):
        from pipeline.errors import InspectError
        from pipeline.inspect import render_animation, render_overlay
        from pipeline.store import open_fit

        if video is None and (camera or calibration):
            raise InspectError("--camera and --calibration need --video (the camera's video)")
        data = open_fit(fit)
        if video is not None:
            done = render_overlay(data, video, out, camera, calibration, offset=offset)
            what = f"overlay of {video.name}"
        else:
            done = render_animation(data, out, size=(width, height), step=step)
            what = "3D animation"
        size = done.path.stat().st_size / 1e6
        say(
            f"[green]wrote[/] {q(what)}: {q(done.path)} ({len(done.frames)} frames at "
            f"{done.fps:.4g} fps, {size:.1f} MB)"
        )
