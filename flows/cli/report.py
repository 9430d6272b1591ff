"""``kinefit report``: a self-contained HTML report of one fit store or of a fits folder.

The lead mounts :func:`report` into the main app (``app.command("report")(report)``), or
the whole :data:`report_app` (``app.add_typer(report_app)``: its one command is
``report``). Errors print one line and exit with status 1 (``--verbose``: traceback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pipeline.errors import FitStoreError

__all__ = ["report", "report_app"]

report_app = typer.Typer(
    rich_markup_mode=None, add_completion=False, pretty_exceptions_enable=False
)
_out = Console()
_err = Console(stderr=True)


def _is_fit_store(path: Path) -> bool:
    from pipeline.store.fit import store_attrs

    return (path / "zarr.json").is_file() and "fingerprint" in store_attrs(path)


@report_app.command("report")
def report(
    path: Annotated[
        Path, typer.Argument(help="A fit store (FIT.zarr), or a folder of fit stores.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="HTML file to write; default FIT.report.html beside a store, or "
            "FITS_ROOT/report.html for a folder.",
        ),
    ] = None,
    worst: Annotated[int, typer.Option(min=0, help="Worst frames to list.")] = 10,
    detailed: Annotated[
        int,
        typer.Option(min=0, help="Folder reports: sessions given full plots (worst first)."),
    ] = 10,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks.")] = False,
) -> None:
    """Write a self-contained HTML report (summary, plots, provenance, worst frames)."""
    try:
        from pipeline.inspect.report import write_archive_report, write_session_report

        if not path.exists():
            raise FileNotFoundError(f"{path}: no such fit store or folder")
        if _is_fit_store(path):
            written = write_session_report(path, out, worst=worst)
            what = "session report"
        elif (path / "zarr.json").is_file():
            raise FitStoreError(f"{path}: a zarr store but not a kinefit fit store")
        else:
            from pipeline.inspect.archive import find_fit_stores

            stores, problems = find_fit_stores(path)
            if not stores:
                first = next(iter(problems.values()), "")
                detail = f" ({len(problems)} unusable: {first})" if problems else ""
                raise FileNotFoundError(f"{path}: no complete fit stores found{detail}")
            written = write_archive_report(path, out, worst=worst, detailed=detailed)
            what = f"archive report of {len(stores)} session(s)"
    except Exception as exc:  # noqa: BLE001 - the CLI reports every failure the same way
        if verbose:
            _err.print_exception()
        _err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    size = written.stat().st_size / 1e6
    _out.print(
        f"[green]wrote[/] {what}: {written} ({size:.1f} MB)", highlight=False, soft_wrap=True
    )
