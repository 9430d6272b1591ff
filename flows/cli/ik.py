"""``kinefit ik SETUP.xml``: run an OpenSim ``InverseKinematicsTool`` setup with kinefit.

Mounted in the main app as ``app.command("ik")(ik)``. Writes the setup's
``output_motion_file`` and ``<name>_ik_marker_errors.sto`` as OpenSim does (or both under
``--output``); the logic is :func:`pipeline.opensim_setup.ik_run.run_ik`. Errors print one
line and exit 1; nothing is written then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import Verbose, guard
from flows.cli.output import q, say

__all__ = ["ik"]


def ik(
    setup: Annotated[Path, typer.Argument(help="OpenSim IK setup (InverseKinematicsTool XML).")],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Folder for the .mot and marker errors (default: where the setup says).",
        ),
    ] = None,
    model: Annotated[
        Path | None,
        typer.Option("--model", help="The .osim model to use instead of the setup's model_file."),
    ] = None,
    markers: Annotated[
        Path | None,
        typer.Option("--markers", help="The .trc to use instead of the setup's marker_file."),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Fit an OpenSim IK setup's markers with its model, tasks and time range."""
    with guard(verbose):
        from pipeline.opensim_setup.ik_run import run_ik

        run = run_ik(setup, output, model_file=model, marker_file=markers)
        rms = run.marker_errors[:, 1]
        say(
            f"[green]fitted[/] {run.time.size} frames ({run.time[0]:g}-{run.time[-1]:g} s), "
            f"{run.iterations.mean():.1f} iterations/frame, marker RMS mean "
            f"{rms.mean() * 1000:.3f} mm (max {run.marker_errors[:, 2].max() * 1000:.3f} mm); "
            f"wrote {q(run.motion_file)} and {q(run.errors_file)}"
        )
