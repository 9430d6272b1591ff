"""The ``kinefit`` command line (typer + rich).

Commands: ``demo``, ``ingest``, ``fit``, ``reprocess``, ``serve``, ``export`` (``csv``,
``kimodo``), ``report``, ``config show``, ``body-plan validate|show``. Each is a thin shell
around ``pipeline`` calls or a Prefect flow. Errors print one clear line and exit with
status 1; ``--verbose`` shows the traceback. Nothing heavy is imported at the top level
(no numpy, no prefect), so ``kinefit --help`` is fast; commands import what they need.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from flows.cli.calibrate import calibrate, calibrated_plan
from flows.cli.common import (
    ConfigOption,
    SetOption,
    UpAxisOption,
    Verbose,
    cluster_override,
    guard,
    load_plan,
    parse_options,
)
from flows.cli.config import body_plan_app, config_app
from flows.cli.export import export_app
from flows.cli.fit_config import fit_config as _fit_config
from flows.cli.fit_outcome import auto_plan, fit_summary
from flows.cli.group import KinefitGroup
from flows.cli.ik import ik
from flows.cli.output import console, err_console, q, say
from flows.cli.render import render
from flows.cli.report import report
from flows.cli.run import demo, reprocess, serve
from flows.cli.views import Pose2SimConfigOption, ingest_views_command, pose2sim_options
from flows.logs import quiet_dask_logs

#: Reader names for ``ingest --help`` (kept in step with the registry by a test; the
#: registry itself is not imported here, so ``kinefit --help`` stays fast).
FORMAT_NAMES = (
    "movement",
    "npz",
    "lightningpose",
    "dlc",
    "sleap",
    "slp",
    "anipose",
    "nwb",
    "c3d",
    "trc",
    "bvh",
    "csv",
    "openpose",
    "kimodo",
)

app = typer.Typer(
    cls=KinefitGroup,
    rich_markup_mode=None,
    name="kinefit",
    help="Fit kinematic body plans to keypoint tracking archives.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
__all__ = ["app", "console", "err_console", "main"]


def _print_version(value: bool) -> None:
    if value:
        from pipeline import __version__

        console.print(f"kinefit {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Fit kinematic body plans to keypoint tracking archives."""


@app.command()
def ingest(
    source: Annotated[
        list[str] | None,
        typer.Argument(help="Tracks file (any registered format); with --views: NAME=FILE."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Tracks zarr store to write.")
    ] = None,
    views: Annotated[
        list[str] | None,
        typer.Option(
            help="Multi-camera session: --views camA=a.csv camB=b.csv, one 2D file (or "
            "folder) per camera of --calibration (names matched after normalisation, any "
            "order); or bare paths, paired by name or sorted order."
        ),
    ] = None,
    calibration: Annotated[
        Path | None, typer.Option(help="With --views: Anipose/Pose2Sim TOML or OpenCV YAML/JSON.")
    ] = None,
    unit: Annotated[
        str | None, typer.Option(help="With --views: the calibration's length unit if unrecorded.")
    ] = None,
    offset: Annotated[
        list[str] | None,
        typer.Option(help="With --views: VIEW=N, frame N of that view's file is session frame 0."),
    ] = None,
    fps: Annotated[
        float | None,
        typer.Option(help="Frame rate, used only if the file has none (see --force-fps)."),
    ] = None,
    force_fps: Annotated[
        bool,
        typer.Option(help="--fps replaces the file's own frame rate (kept as file_fps)."),
    ] = False,
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="Reader name (default: by suffix and content): " + ", ".join(FORMAT_NAMES) + ".",
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-O",
            help="Reader option key=value (repeatable), e.g. -O unit=mm (every reader takes "
            "unit, up_axis, session; a wrong name lists the reader's options).",
        ),
    ] = None,
    to_unit: Annotated[
        str | None,
        typer.Option(help="Convert lengths to this unit (m, cm, mm, ...), e.g. --to-unit m."),
    ] = None,
    up_axis: UpAxisOption = None,
    skeleton_file: Annotated[
        Path | None, typer.Option(help="Kimodo reader: skeletons JSON file.")
    ] = None,
    skeleton: Annotated[str | None, typer.Option(help="Kimodo reader: skeleton name.")] = None,
    keypoint_map: Annotated[
        Path | None, typer.Option(help="YAML map renaming track keypoints (old: new).")
    ] = None,
    chunk_frames: Annotated[int | None, typer.Option(help="Frames per zarr chunk.")] = None,
    frames: Annotated[
        str | None, typer.Option(help="Keep only these frames, START:STOP (e.g. 0:500).")
    ] = None,
    config: ConfigOption = None,
    pose2sim_config: Pose2SimConfigOption = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing store.")] = False,
    verbose: Verbose = False,
) -> None:
    """Read one keypoint tracks file into a validated, time-chunked zarr tracks store.

    Reader options come from the run config's 'archive' section (--config), then
    --option key=value pairs and --skeleton-file/--skeleton (Kimodo constraints files).
    """
    with guard(verbose):
        from pipeline.archive.reader_settings import reader_settings
        from pipeline.config import RunConfig, load_run_config
        from pipeline.errors import ConfigError
        from pipeline.store import write_tracks
        from pipeline.tracks import read_tracks

        given = parse_options(option)  # the named options below win over -O ones
        named = {"skeleton_file": skeleton_file and str(skeleton_file), "skeleton": skeleton}
        named.update(keypoint_map=keypoint_map, up_axis=up_axis)
        given.update({k: v for k, v in named.items() if v is not None})
        fps, given = pose2sim_options(pose2sim_config, fps, given)
        run = load_run_config(config) if config else RunConfig()
        how = reader_settings(run.archive, format=format, fps=fps, to_unit=to_unit, options=given)
        chunk = run.chunking.tracks_chunk_frames if chunk_frames is None else chunk_frames
        if out is None:
            raise ConfigError("--out: the tracks store to write is required")
        if views:
            return ingest_views_command(
                [*views, *(source or ())],
                calibration,
                out,
                unit=unit,
                offsets=offset,
                fps=how.fps,
                format=how.format,
                options=how.options,
                chunk_frames=chunk,
                overwrite=overwrite,
            )
        if not source or len(source) != 1:
            raise ConfigError("expected one tracks file (SOURCE), or --views NAME=FILE ...")
        ds = read_tracks(
            Path(source[0]),
            format=how.format,
            fps=how.fps,
            to_unit=how.to_unit,
            force_fps=force_fps,
            **how.options,
        )
        if frames is not None:
            from pipeline.tracks.frame_range import select_frames

            ds = select_frames(ds, frames, source[0])
        write_tracks(ds, out, chunk_frames=chunk, overwrite=overwrite)
        observed = float(ds["position"].notnull().all("space").mean())
        say(
            f"[green]wrote[/] {q(out)}: {ds.sizes['time']} frames at {ds.attrs['fps']:g} fps, "
            f"{ds.sizes['keypoint']} keypoints, {ds.sizes['individual']} individual(s), "
            f"{ds.sizes['space']}-D, {observed:.1%} observed"
        )


@app.command()
def fit(
    tracks: Annotated[Path, typer.Argument(help="Tracks zarr store (from kinefit ingest).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Fit zarr store to write.")],
    body_plan: Annotated[
        str | None,
        typer.Option(
            "--body-plan",
            "-b",
            help="Body-plan JSON, a shipped plan (kinefit body-plan list), or 'auto': the "
            "shipped plan whose keypoint names match best, with its map (default: config).",
        ),
    ] = None,
    config: ConfigOption = None,
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
    multiview: Annotated[
        str,
        typer.Option(
            help="Multi-camera stores: 'direct' (fit every view's pixels) or 'triangulate' "
            "(DLT, then the 3D fit: the baseline)."
        ),
    ] = "direct",
    image_scale: Annotated[
        float | None,
        typer.Option(
            help="2-D image tracks: body-plan length per pixel (default: estimated from "
            "the session's pixels; depth is unobservable from one view)."
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="Subject calibration (kinefit calibrate): fit its calibrated plan."),
    ] = None,
    up_axis: UpAxisOption = None,
    auto_calibrate: Annotated[
        bool,
        typer.Option(
            help="With -b auto on a session of one individual (3D, or one 2D view: segment "
            "scales through the image plane): calibrate the chosen plan to the subject "
            "first (on 50 frames) and fit that."
        ),
    ] = True,
    set_: SetOption = None,
    verbose: Verbose = False,
) -> None:
    """Fit a body plan to every individual of a tracks store, chunk by chunk on dask.

    Settings come from --config (solver, chunking, cluster, body_plan, keypoint_map,
    ik_setup: an OpenSim IK setup's marker weights and coordinate tasks); options given
    here override them, then --set key.path=value (e.g. --set
    cluster.n_workers=4 for four SLURM jobs). Ctrl-C or SIGTERM cancels every batch job
    kinefit submitted and keeps the finished chunks: rerun to resume.
    """
    with guard(verbose):
        from contextlib import ExitStack

        from flows.cli.cluster import interruptible
        from pipeline.cluster import dask_client
        from pipeline.fit import check_fit_request, fit_session
        from pipeline.fit.plan_choice import AUTO
        from pipeline.opensim_setup.fit_terms import setup_fit
        from pipeline.store import open_tracks

        quiet_dask_logs(verbose)
        plan_spec = body_plan if calibration is None else str(calibration)
        # absolute before any task leaves this process; inputs checked before jobs start
        shown, tracks, out = tracks, tracks.resolve(), out.resolve()
        cluster_override(workers, scheduler)  # contradicting options first, before the files
        ds = open_tracks(tracks)
        size = (ds.sizes["time"], ds.sizes["individual"])
        run = _fit_config(config, plan_spec, workers, scheduler, set_, size)
        choice = None
        if calibration is not None:
            plan = calibrated_plan(calibration, None if body_plan == AUTO else body_plan)
        elif run.body_plan == AUTO:  # -b auto, or the config's body_plan: auto
            choice = auto_plan(shown, keypoint_map or run.keypoint_map, auto_calibrate)
            plan = choice.plan
        else:
            plan = load_plan(run.body_plan)
        chosen = None if choice is None else choice.mapping
        keypoint_map = keypoint_map or chosen or run.keypoint_map
        session = ds.attrs.get("session") or tracks.stem
        solver, tasks = setup_fit(run.ik_setup.for_session(session), plan, run.solver_config)
        overlap = run.chunking.overlap_frames if overlap_frames is None else overlap_frames
        chunks = run.chunking.chunk_frames if chunk_frames is None else chunk_frames
        check_fit_request(
            ds,
            plan,
            source=str(tracks),
            multiview=multiview,
            image_scale=image_scale,
            up_axis=up_axis or run.up_axis,
            world_rotation=run.world_rotation,
            keypoint_map=keypoint_map,
            chunk_frames=chunks,
            overlap_frames=overlap,
        )
        progress = Progress(
            TextColumn("[bold]fitting[/] chunks"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        bar = progress.add_task("chunks", total=None)

        def update(done: int, total: int) -> None:
            """Show the bar once there is work (a current fit never shows an empty one)."""
            if not progress.live.is_started:
                progress.start()
            progress.update(bar, completed=done, total=total)

        t0 = time.perf_counter()
        with interruptible(), ExitStack() as stack:
            with console.status("starting the cluster") as spinner:
                client = stack.enter_context(dask_client(run.cluster, spinner.update))
            try:
                report = fit_session(
                    tracks,
                    plan,
                    solver,
                    out,
                    client=client,
                    chunk_frames=chunks,
                    overlap_frames=overlap,
                    force=force,
                    keypoint_map=keypoint_map,
                    progress=update,
                    multiview=multiview,
                    image_scale=image_scale,
                    up_axis=up_axis or run.up_axis,
                    world_rotation=run.world_rotation,
                    coordinate_tasks=tasks,
                    plan_choice=None if choice is None else choice.record(),
                )
            finally:
                progress.stop()
        if report.skipped:
            say(
                f"[green]up to date:[/] {q(out)} matches its inputs (fingerprint "
                f"{report.fingerprint[:12]}); use --force to refit"
            )
            return
        console.print(fit_summary(report, time.perf_counter() - t0))


app.command()(demo)
app.command()(reprocess)
app.command()(serve)
app.add_typer(export_app, name="export")
app.command("report")(report)
app.command("render")(render)
app.command("calibrate")(calibrate)
app.command("ik")(ik)
app.add_typer(config_app, name="config")
app.add_typer(body_plan_app, name="body-plan")


def main() -> None:  # pragma: no cover - console entry point
    """Run the CLI."""
    app()
