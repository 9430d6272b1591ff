"""``kinefit report``: a self-contained HTML report of one fit store or of a fits folder.

Registered on the main app (:mod:`flows.cli.app`). Errors print one line (the CLI's
shared guard); an existing report is replaced only with ``--overwrite``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import Verbose, guard
from flows.cli.output import q, say
from pipeline.errors import FitStoreError

__all__ = ["report"]


def _is_fit_store(path: Path) -> bool:
    from pipeline.store.attrs import store_attrs

    return (path / "zarr.json").is_file() and "fingerprint" in store_attrs(path)


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
    overwrite: Annotated[bool, typer.Option(help="Replace an existing report.")] = False,
    verbose: Verbose = False,
) -> None:
    """Write a self-contained HTML report (summary, plots, provenance, worst frames)."""
    with guard(verbose):
        from pipeline.inspect.report.pages import write_archive_report, write_session_report

        if not path.exists():
            raise FileNotFoundError(f"{path}: no such fit store or folder")
        store = _is_fit_store(path)
        target = out or (
            path.with_name(f"{path.name.removesuffix('.zarr')}.report.html")
            if store
            else path / "report.html"
        )
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target}: already exists; pass --overwrite to replace it")
        if store:
            written = write_session_report(path, target, worst=worst)
            what = "session report"
        elif (path / "zarr.json").is_file():
            raise FitStoreError(f"{path}: a zarr store but not a kinefit fit store")
        else:
            from pipeline.inspect.data.fit_archive import find_fit_stores

            stores, problems = find_fit_stores(path)
            if not stores:
                first = next(iter(problems.values()), "")
                detail = f" ({len(problems)} unusable: {first})" if problems else ""
                raise FileNotFoundError(f"{path}: no complete fit stores found{detail}")
            written = write_archive_report(path, target, worst=worst, detailed=detailed)
            what = f"archive report of {len(stores)} session(s)"
        size = written.stat().st_size / 1e6
        say(f"[green]wrote[/] {what}: {q(written)} ({size:.1f} MB)")
