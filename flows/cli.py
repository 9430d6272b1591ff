"""The ``kinefit`` command line (typer + rich).

Each command is a thin shell around one ``pipeline`` call. Errors print one clear message
and exit with status 1; ``--verbose`` shows the traceback. Prefect is never imported at
the top level here: commands that run flows import them when called.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(
    name="kinefit",
    help="Fit kinematic body plans to keypoint tracking archives.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=False)
err_console = Console(stderr=True)

Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks on errors.")]


@contextmanager
def _guard(verbose: bool) -> Iterator[None]:
    """Turn any exception into one clear message and exit status 1; show warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except typer.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 - the CLI reports every failure the same way
            _show_warnings(caught)
            if verbose:
                err_console.print_exception()
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
    _show_warnings(caught)


def _show_warnings(caught: list[warnings.WarningMessage]) -> None:
    seen = set()
    for w in caught:
        text = str(w.message)
        if text not in seen and not issubclass(w.category, DeprecationWarning | FutureWarning):
            seen.add(text)
            err_console.print(f"[yellow]warning:[/] {text}", highlight=False, soft_wrap=True)


def _load_plan(spec: str) -> Any:
    from pipeline.bodyplan import load_body_plan, mannequin

    return mannequin() if spec == "mannequin" else load_body_plan(spec)


@app.command()
def ingest(
    source: Annotated[Path, typer.Argument(help="Tracks file (any registered format).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Tracks zarr store to write.")],
    fps: Annotated[float | None, typer.Option(help="Frame rate, if the file lacks it.")] = None,
    format: Annotated[
        str | None, typer.Option("--format", "-f", help="Reader name; default by suffix.")
    ] = None,
    keypoint_map: Annotated[
        Path | None, typer.Option(help="YAML map renaming track keypoints (old: new).")
    ] = None,
    chunk_frames: Annotated[int, typer.Option(help="Frames per zarr chunk.")] = 4096,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing store.")] = False,
    verbose: Verbose = False,
) -> None:
    """Read keypoint tracks into a validated, time-chunked zarr tracks store."""
    with _guard(verbose):
        from pipeline.store import write_tracks
        from pipeline.tracks import read_tracks
        from pipeline.tracks.mapping import rename_keypoints

        ds = read_tracks(source, format=format, fps=fps)
        if keypoint_map is not None:
            ds = rename_keypoints(ds, keypoint_map, source=str(source))
        write_tracks(ds, out, chunk_frames=chunk_frames, overwrite=overwrite)
        observed = float(ds["position"].notnull().all("space").mean())
        console.print(
            f"[green]wrote[/] {out}: {ds.sizes['time']} frames at {ds.attrs['fps']:g} fps, "
            f"{ds.sizes['keypoint']} keypoints, {ds.sizes['individual']} individual(s), "
            f"{ds.sizes['space']}-D, {observed:.1%} observed",
            highlight=False,
            soft_wrap=True,
        )


def _client(workers: int | None, scheduler: str | None) -> Any:
    from pipeline.cluster import ClusterConfig, make_client

    if scheduler and workers is not None:
        raise typer.BadParameter("pass either --workers or --scheduler, not both")
    if scheduler:
        return make_client(ClusterConfig(mode="address", address=scheduler))
    n = workers if workers is not None else max(1, min(os.cpu_count() or 1, 8))
    return None if n == 0 else make_client(ClusterConfig(mode="local", n_workers=n))


def _summary(report: Any, wall: float) -> Table:
    import numpy as np

    from pipeline.store.fit_store import open_fit

    fit = open_fit(report.out)
    rms = fit["rms_error"].values
    converged = fit["converged"].values
    seam = fit["seam_disagreement"].values
    table = Table(title=f"fit {report.out}", show_header=False, box=None)
    fitted = len(report.chunks_fitted)
    rows = [
        ("frames", f"{report.n_frames} x {report.n_individuals} individual(s)"),
        ("chunks", f"{report.n_chunks} ({fitted} fitted now, {report.n_chunks - fitted} resumed)"),
        ("frames/s", f"{report.n_frames * fitted / max(report.n_chunks, 1) / wall:,.0f}"),
        ("median RMS", f"{np.nanmedian(rms):.4g} {fit.attrs.get('unit') or ''}".strip()),
        ("worst RMS", f"{np.nanmax(rms):.4g} (frame {int(np.nanargmax(rms.max(axis=1)))})"),
        ("non-converged", f"{int((~converged).sum())} frame-individuals"),
        ("worst seam", "n/a" if np.all(np.isnan(seam)) else f"{np.nanmax(seam):.3g}"),
    ]
    if report.unmapped_keypoints:
        rows.append(("unmapped keypoints", ", ".join(report.unmapped_keypoints)))
    for key, value in rows:
        table.add_row(f"[bold]{key}[/]", value)
    return table


@app.command()
def fit(
    tracks: Annotated[Path, typer.Argument(help="Tracks zarr store (from `kinefit ingest`).")],
    body_plan: Annotated[
        str, typer.Option("--body-plan", "-b", help="Body-plan JSON, or 'mannequin'.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Fit zarr store to write.")],
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Fit config YAML (solver:, fit:).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes (0: in this process).")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="Address of a running dask scheduler.")
    ] = None,
    chunk_frames: Annotated[int | None, typer.Option(help="Frames per chunk/task.")] = None,
    overlap_frames: Annotated[int | None, typer.Option(help="Warm-up frames per chunk.")] = None,
    keypoint_map: Annotated[
        Path | None, typer.Option(help="YAML map: track keypoint -> joint name.")
    ] = None,
    force: Annotated[bool, typer.Option(help="Refit even if the fit is current.")] = False,
    verbose: Verbose = False,
) -> None:
    """Fit a body plan to every individual of a tracks store, chunk by chunk on dask."""
    with _guard(verbose):
        from pipeline.cluster import close_client
        from pipeline.fit import fit_session
        from pipeline.settings import FitSettings, load_fit_config
        from pipeline.solve import SolverConfig

        solver, settings = load_fit_config(config) if config else (SolverConfig(), FitSettings())
        plan = _load_plan(body_plan)
        client = _client(workers, scheduler)
        progress = Progress(
            TextColumn("[bold]fitting[/] chunks"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        bar = progress.add_task("chunks", total=None)
        update: Callable[[int, int], None] = lambda done, total: progress.update(  # noqa: E731
            bar, completed=done, total=total
        )
        t0 = time.perf_counter()
        try:
            with progress:
                report = fit_session(
                    tracks,
                    plan,
                    solver,
                    out,
                    client=client,
                    chunk_frames=chunk_frames or settings.chunk_frames,
                    overlap_frames=(
                        overlap_frames if overlap_frames is not None else settings.overlap_frames
                    ),
                    force=force,
                    keypoint_map=keypoint_map,
                    progress=update,
                )
        finally:
            if client is not None:
                close_client(client)
        if report.skipped:
            console.print(
                f"[green]up to date:[/] {out} matches its inputs (fingerprint "
                f"{report.fingerprint[:12]}); use --force to refit",
                highlight=False,
                soft_wrap=True,
            )
            return
        console.print(_summary(report, time.perf_counter() - t0))


def main() -> None:  # pragma: no cover - console entry point
    """Run the CLI."""
    app()


if __name__ == "__main__":  # pragma: no cover - python -m flows.cli
    main()
