"""``kinefit export``: fitted motion in other tools' formats, one subcommand per exporter.

``csv``, ``bvh``, ``trc``, ``mot``, ``nwb``, ``qpos``, ``movement`` run the exporters of
:data:`pipeline.export.exporter_registry.EXPORTERS` (each command is a thin shell around
:func:`pipeline.export.exporter_registry.export`, imported when the command runs so that
``--help`` stays fast); ``kimodo`` has its own options (:mod:`flows.cli.kimodo`). Every
command writes beside the fit store unless ``-o`` says where, refuses to replace files
without ``--overwrite``, and prints what it wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli.common import Verbose, guard
from flows.cli.kimodo import kimodo
from flows.cli.output import q, say

export_app = typer.Typer(
    rich_markup_mode=None,
    help="Export fitted motion to other tools' formats.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
export_app.command("kimodo")(kimodo)

Fit = Annotated[Path, typer.Argument(help="Fit zarr store (from kinefit fit).")]
Out = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="File to write (default: beside the store)."),
]
Individual = Annotated[
    str | None,
    typer.Option(help="Only this individual (default: all; one file each where needed)."),
]
Overwrite = Annotated[bool, typer.Option(help="Replace existing files.")]
Angles = Annotated[
    str, typer.Option("--angles", help="Named joint angles in 'deg' or 'rad', or 'none'.")
]


def _run(name: str, fit: Path, out: Path | None, overwrite: bool, verbose: bool, **options: Any):
    with guard(verbose):
        from pipeline.export.exporter_registry import export  # noqa: PLC0415 - `--help` stays fast

        result = export(name, fit, out, overwrite=overwrite, **options)
        for path in result.files:
            say(f"[green]wrote[/] {q(path)} ({path.stat().st_size / 1e3:,.0f} kB)")


@export_app.command("csv")
def csv(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    angles: Angles = "deg",
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """DOF trajectories, root pose and named angles, one row per frame; units in the header."""
    _run("csv", fit, out, overwrite, verbose, individual=individual, angles=angles)


@export_app.command("bvh")
def bvh(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    rotation_order: Annotated[
        str, typer.Option(help="Euler channel order: ZXY, ZYX, XYZ, XZY, YXZ or YZX.")
    ] = "ZXY",
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """The fitted skeleton and motion as BVH (one file per individual)."""
    _run("bvh", fit, out, overwrite, verbose, individual=individual, rotation_order=rotation_order)


@export_app.command("trc")
def trc(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    keypoints: Annotated[
        str, typer.Option(help="Markers: 'both' (fitted and observed), 'fitted', 'observed'.")
    ] = "both",
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """Fitted (and observed) keypoints as OpenSim markers, .trc (one file per individual)."""
    _run("trc", fit, out, overwrite, verbose, individual=individual, keypoints=keypoints)


@export_app.command("mot")
def mot(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """OpenSim coordinates (.mot, degrees) of a fit of a plan imported from .osim."""
    _run("mot", fit, out, overwrite, verbose, individual=individual)


@export_app.command("nwb")
def nwb(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    angles: Angles = "deg",
    session_file: Annotated[
        Path | None,
        typer.Option(help="Existing NWB file of the session to add to (copied, not changed)."),
    ] = None,
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """Fitted keypoints (ndx-pose) and joint angles as NWB (one file per individual)."""
    _run(
        "nwb",
        fit,
        out,
        overwrite,
        verbose,
        individual=individual,
        angles=angles,
        session_file=session_file,
    )


@export_app.command("qpos")
def qpos(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """Engine coordinates per frame (MuJoCo qpos / URDF q) of an MJCF or URDF plan; .npz or .csv."""
    _run("qpos", fit, out, overwrite, verbose, individual=individual)


@export_app.command("movement")
def movement(
    fit: Fit,
    out: Out = None,
    individual: Individual = None,
    dims: Annotated[
        str,
        typer.Option(help="Dim names: 'singular' (movement >= 0.17) or 'plural' (older)."),
    ] = "singular",
    overwrite: Overwrite = False,
    verbose: Verbose = False,
) -> None:
    """Fitted keypoints as a movement poses dataset (netCDF)."""
    _run("movement", fit, out, overwrite, verbose, individual=individual, dims=dims)
