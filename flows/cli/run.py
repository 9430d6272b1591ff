"""``kinefit demo``, ``kinefit reprocess`` and ``kinefit serve``: the archive flows.

One-off runs (``demo``, ``reprocess``) use Prefect's ephemeral server (or the server in
``PREFECT_API_URL``); ``serve`` needs a real server and starts a local one if none is set
(:mod:`flows.server`). Prefect is imported inside the commands, after
:func:`flows.env.prepare_prefect_env` has set kinefit's quiet defaults.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from flows.cli.common import (
    ConfigOption,
    SetOption,
    Verbose,
    cluster_override,
    guard,
    shell_command,
)
from flows.cli.output import console, print_summary, q, say
from flows.logs import quiet_dask_logs, quiet_library_logs
from pipeline.errors import SessionsFailed

Workers = Annotated[
    int | None, typer.Option(help="Local worker processes (0: no cluster, in this process).")
]
Scheduler = Annotated[str | None, typer.Option(help="Address of a running dask scheduler.")]
Force = Annotated[bool, typer.Option(help="Re-ingest and refit even if current.")]


def _compile_kernels() -> None:
    """Compile the solver's kernels here, once, before any timed work (numba caches them).

    The first run on a machine compiles for 1-2 minutes (and says so); later runs, and the
    Dask workers (a preload plugin), load the cached kernels in well under a second.
    """
    from pipeline.solve.compiled import warm_up

    seconds = warm_up(say=lambda text: say(q(text)))
    if seconds > 2.0:
        say(f"compiled the solver kernels in {seconds:.0f} s (first run only; now cached)")


def _run(config: Any, force: bool, verbose: bool = False) -> Any:
    """Run reprocess-archive with progress bars (and Prefect's INFO logs with --verbose)."""
    from flows.env import prepare_prefect_env

    prepare_prefect_env()
    from flows.archive import reprocess_archive
    from flows.cli.cluster import interruptible
    from flows.ephemeral import start_ephemeral_server
    from flows.progress import progress_hook
    from pipeline.cluster import interrupted

    quiet_library_logs(verbose)
    bars = Progress(
        TextColumn("[bold]{task.description:>6}[/] sessions"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    stages: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in stages:
            stages[stage] = bars.add_task(stage, total=total)
        bars.update(stages[stage], completed=done, total=total)

    ephemeral = start_ephemeral_server()  # in the background, deaf to Ctrl-C
    _compile_kernels()
    if ephemeral is not None:
        with console.status("starting Prefect's ephemeral server"):
            ephemeral.wait()
    say(f"reprocessing {q(config.archive.path)} (Prefect flow reprocess-archive)")
    with interruptible(), bars, progress_hook(update):  # Ctrl-C/SIGTERM: jobs cancelled
        try:
            return reprocess_archive(config, force=force, verbose=verbose)
        except SessionsFailed as failed:  # the run is Failed in Prefect; report it here
            if interrupted():  # sessions cut short by Ctrl-C or SIGTERM did not fail
                raise KeyboardInterrupt from None
            return failed.summary


def reprocess(
    config: ConfigOption = None,
    archive: Annotated[
        str | None, typer.Option(help="Archive folder or fsspec URL (archive.path).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output root (outputs.root).")
    ] = None,
    body_plan: Annotated[
        str | None,
        typer.Option(
            "--body-plan",
            "-b",
            help="Body-plan JSON, a shipped plan, or 'auto' (each session's best match).",
        ),
    ] = None,
    workers: Workers = None,
    scheduler: Scheduler = None,
    set_: SetOption = None,
    force: Force = False,
    recalibrate: Annotated[
        bool,
        typer.Option(help="Recompute the stored subject calibrations (config calibration)."),
    ] = False,
    verbose: Verbose = False,
) -> None:
    """Reprocess an archive: ingest new or changed sessions, fit the stale ones, report.

    Runs the Prefect flow reprocess-archive once (ephemeral server unless PREFECT_API_URL
    is set). Exits with status 1 if any session failed.
    """
    with guard(verbose):
        from flows.cli.cluster import check_workers_option
        from pipeline.archive.discover import check_archive_folder
        from pipeline.config import load_run_config

        if workers is not None:  # --workers never silently turns a SLURM config local
            check_workers_option(workers, load_run_config(config, {}, set_ or ()).cluster)
        overrides = {
            "archive": {"path": archive},
            "outputs": {"root": None if out is None else str(out)},
            "body_plan": body_plan,
            "cluster": cluster_override(workers, scheduler),
            "calibration": {"recalibrate": True if recalibrate else None},
        }
        run = load_run_config(config, overrides, set_ or ())
        check_archive_folder(run.archive)
        summary = _run(run, force, verbose)
        print_summary(summary)
        if summary.failed:
            raise typer.Exit(1)


def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Demo folder.")] = Path("kinefit-demo"),
    frames: Annotated[int, typer.Option(min=32, help="Frames per demo session.")] = 6000,
    workers: Workers = None,
    config: ConfigOption = None,
    force: Force = False,
    verbose: Verbose = False,
) -> None:
    """Write a synthetic mannequin archive into a folder and reprocess it (a full run).

    Run it twice: the second run finds every session current and skips it. --config
    changes the built-in default (pipeline/config/shipped/default.yaml), e.g. to use
    another cluster.
    """
    with guard(verbose):
        import numpy as np

        from pipeline.bodyplan import mannequin
        from pipeline.config import load_run_config
        from pipeline.config.config_files import dump_yaml
        from pipeline.store.atomic import write_text_atomic
        from pipeline.synth.demo import write_demo_archive

        out = out.resolve()
        overrides = {
            # the demo's sessions are rendered from the mannequin (+Y up); its CSV session
            # cannot record that, so the archive says it for every session
            "archive": {"path": str(out / "archive"), "options": {"up_axis": "y"}},
            "outputs": {"root": str(out)},
            "cluster": cluster_override(workers, None),
        }
        run = load_run_config(config, overrides, layered=True)  # checked before writing
        with console.status(f"writing the demo archive into {out / 'archive'}"):
            files = write_demo_archive(
                out / "archive", mannequin(), np.random.default_rng(2026), n_frames=frames
            )
        say(f"demo archive: {len(files)} sessions in {q(out / 'archive')}")
        write_text_atomic(out / "kinefit.yaml", dump_yaml(run.model_dump(mode="json")))
        summary = _run(run, force, verbose)
        print_summary(summary)
        _where(run, summary, out)
        if summary.failed:
            raise typer.Exit(1)


def _notebook_command(fits: Path) -> str:
    """How to open the inspection notebook on ``fits`` from any folder.

    ``make -C <checkout> notebook`` when kinefit runs from a checkout (its Makefile
    installs JupyterLab and passes the headless and root flags); else JupyterLab itself
    on the notebook, when the notebook is there.
    """
    checkout = Path(__file__).resolve().parents[2]
    fits_arg = shlex.quote(str(fits))
    if (checkout / "Makefile").is_file():
        return f"make -C {shlex.quote(str(checkout))} notebook FITS={fits_arg}"
    notebook = checkout / "notebooks" / "inspect_fit.ipynb"
    return (
        f"KINEFIT_FITS_ROOT={fits_arg} jupyter lab --no-browser "
        f"{shlex.quote(str(notebook))}  (pip install jupyterlab; --allow-root as root)"
    )


def _where(run: Any, summary: Any, out: Path) -> None:
    """Where the results are, and commands to use them that work as printed."""
    fits = run.outputs.fits_dir
    first = next((s.fit for s in summary.sessions if s.fit), str(fits / "walk_clean.zarr"))
    kinefit, python = shell_command("kinefit"), shell_command("python")
    config = shlex.quote(str(out / "kinefit.yaml"))
    say(f"\n[bold]results[/] in {q(out)}: tracks/ (inputs), fits/ (one zarr store each)")
    code = f"import xarray as xr; print(xr.open_zarr({str(first)!r}))"
    say(escape(f"  open a fit:   {python} -c {shlex.quote(code)}"))
    say(escape(f"  in Python:    from pipeline.store import open_fit; open_fit({str(first)!r})"))
    if summary.report:
        say(escape(f"  HTML report:  {summary.report}"))
    say(escape(f"  notebook:     {_notebook_command(fits)}"))
    say(escape(f"  run again:    {kinefit} reprocess -c {config}  (skips current sessions)"))
    say(escape(f"  on schedule:  {kinefit} serve -c {config}  (Prefect UI on :4200)"))


def serve(
    config: ConfigOption = None,
    cron: Annotated[str | None, typer.Option(help="Cron schedule (schedule.cron).")] = None,
    timezone: Annotated[str | None, typer.Option(help="Time zone of the cron.")] = None,
    name: Annotated[str | None, typer.Option(help="Deployment name.")] = None,
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="Port of a local Prefect server (UI).")
    ] = 4200,
    set_: SetOption = None,
    verbose: Verbose = False,
) -> None:
    """Serve reprocess-archive on the config's cron schedule until Ctrl-C.

    With PREFECT_API_URL set, deploys to that Prefect server. Without it, starts a local
    Prefect server (SQLite under kinefit's Prefect home), serves against it, and stops it
    on exit. The runs show in the Prefect UI (the server's URL, printed below). Each run
    prints a few lines of its own (start, progress, summary, failed sessions, results);
    --verbose also shows Prefect's and distributed's logs of the runs.
    """
    with guard(verbose):
        from flows.env import prepare_prefect_env
        from flows.server import prefect_server
        from flows.server import serve as serve_deployment
        from pipeline.config import load_run_config

        schedule = {"cron": cron, "timezone": timezone, "deployment": name}
        run = load_run_config(config, {"schedule": schedule}, set_ or ())
        env = prepare_prefect_env()
        quiet_dask_logs(verbose)
        if not env.get("PREFECT_API_URL"):
            say(f"starting a local Prefect server (PREFECT_HOME={q(env['PREFECT_HOME'])})")
        with prefect_server(env["PREFECT_HOME"], port) as api:
            say(f"Prefect API: {q(api)}")
            say(f"Prefect UI:  {q(api.removesuffix('/api'))}  (flow runs, logs, summary artifact)")
            deployment = f"reprocess-archive/{run.schedule.deployment}"
            say(
                f"serving deployment {q(deployment)} on '{q(run.schedule.cron)}' "
                f"({q(run.schedule.timezone)}); Ctrl-C stops"
            )
            trigger = f"{shell_command('prefect')} deployment run {shlex.quote(deployment)}"
            say(escape(f"run it now:  PREFECT_API_URL={api} {trigger}"))
            from flows.archive import reprocess_archive_flow  # prefect: the API is set
            from flows.serve_hooks import quiet_serving, served_flow

            if not verbose:
                quiet_serving()
            serve_deployment(run, served_flow(reprocess_archive_flow, verbose))
        say("stopped serving")
