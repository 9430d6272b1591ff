"""``kinefit export``: fitted motion in other tools' formats (``csv``, ``kimodo``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import Verbose, guard, say
from flows.cli.kimodo import kimodo

export_app = typer.Typer(
    help="Export fitted motion to other tools' formats.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
export_app.command("kimodo")(kimodo)


@export_app.command("csv")
def csv(
    fit: Annotated[Path, typer.Argument(help="Fit zarr store (from `kinefit fit`).")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="CSV file (default: beside the store).")
    ] = None,
    individual: Annotated[str | None, typer.Option(help="Only this individual.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing file.")] = False,
    verbose: Verbose = False,
) -> None:
    """Write the fitted DOF trajectories (and root pose) as CSV, one row per frame."""
    with guard(verbose):
        from pipeline.export.csv import export_csv

        target = out or fit.with_name(f"{fit.name.removesuffix('.zarr')}.csv")
        written = export_csv(fit, target, individual=individual, overwrite=overwrite)
        size = written.stat().st_size / 1e3
        say(f"[green]wrote[/] {written} ({size:,.0f} kB)")
