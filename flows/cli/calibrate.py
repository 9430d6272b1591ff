"""``kinefit calibrate TRACKS... -b PLAN -o calibrated.json``: fit the body to one individual.

Mounted in the main app as ``app.command("calibrate")(calibrate)``. The tracks are tracks
stores (``kinefit ingest``) or any tracks file a reader knows; all of them are sessions of
one individual (``--individual`` picks it when a session has several). The output is a
normal version-2 body plan with its ``x-calibration`` record; ``kinefit fit ...
--calibration calibrated.json`` fits with it. Errors print one line and exit 1; nothing
is written then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli.common import Verbose, guard, load_plan
from flows.cli.output import q, say

__all__ = ["calibrate", "calibrated_plan"]


def _open(path: Path, unit: str | None) -> Any:
    """A tracks store, or a tracks file read by its reader (in the plan's unit)."""
    from pipeline.store import open_tracks
    from pipeline.tracks import read_tracks

    if path.is_dir() and (path / "zarr.json").exists():
        return open_tracks(path)
    return read_tracks(path, to_unit=unit) if unit else read_tracks(path)


def calibrate(
    tracks: Annotated[list[Path] | None, typer.Argument(help="Sessions of one individual.")] = None,
    body_plan: Annotated[
        str | None,
        typer.Option("--body-plan", "-b", help="Template body-plan JSON or 'mannequin'."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Calibrated plan (JSON) to write (.osim with --opensim-setup)."
        ),
    ] = None,
    opensim_setup: Annotated[
        Path | None,
        typer.Option(
            help="OpenSim Scale setup (ScaleTool XML): scale its generic model to its static "
            "trial and write the scaled .osim (no tracks or --body-plan then)."
        ),
    ] = None,
    individual: Annotated[
        str | None, typer.Option(help="The individual, when a session has several.")
    ] = None,
    keypoint_map: Annotated[
        Path | None, typer.Option(help="YAML map: track keypoint -> joint name.")
    ] = None,
    frames: Annotated[
        int, typer.Option(min=1, help="Calibration frames over all sessions.")
    ] = 1000,
    min_frames: Annotated[int, typer.Option(min=1, help="Fewer usable frames: an error.")] = 50,
    method: Annotated[str, typer.Option(help="Shape step: 'schur' or 'alternation'.")] = "schur",
    single_view: Annotated[
        bool,
        typer.Option(
            help="Single-view 2-D tracks: calibrate through the image plane at the estimated "
            "image scale (in-plane proportions; depth is unobservable from one view)."
        ),
    ] = False,
    force: Annotated[bool, typer.Option(help="Replace an existing --out.")] = False,
    verbose: Verbose = False,
) -> None:
    """Calibrate a template body plan to one individual from one or several sessions.

    Fits a global scale, left/right-symmetric segment scales and the offsets of the
    plan's markers (its version-2 'calibration' field says which) jointly with the poses
    of well-observed, diverse frames, with a prior toward the template. With
    --opensim-setup, runs an OpenSim Scale setup instead: its measurement and manual scale
    factors, its markers placed by kinefit's fit of the static trial.
    """
    with guard(verbose):
        from pipeline.calibrate import CalibrationConfig
        from pipeline.calibrate import calibrate as run
        from pipeline.errors import CalibrationError

        if opensim_setup is not None:
            if tracks or body_plan is not None:
                raise CalibrationError(
                    "--opensim-setup: the setup names the model and the static trial; "
                    "give no tracks and no --body-plan with it"
                )
            from flows.cli.calibrate_opensim import scale_from_setup

            return scale_from_setup(opensim_setup, out, force)
        if not tracks or body_plan is None or out is None:
            raise CalibrationError(
                "calibrate needs TRACKS..., --body-plan and --out (or --opensim-setup "
                "SETUP_Scale.xml)"
            )
        if out.exists() and not force:
            raise CalibrationError(f"{out}: exists; pass --force to replace it")
        plan = load_plan(body_plan)
        config = CalibrationConfig(n_frames=frames, min_frames=min_frames, method=method)
        sessions = [_open(p, plan.unit) for p in tracks]
        with_names = []
        for path, ds in zip(tracks, sessions, strict=True):
            with_names.append(ds.assign_attrs(session=ds.attrs.get("session") or path.stem))
        cal = run(
            plan,
            with_names,
            config,
            individual=individual,
            keypoint_map=keypoint_map,
            single_view=single_view,
        )
        cal.save(out)
        rec = cal.record
        views = rec.get("cameras") or []
        seen = f" through {len(views)} cameras" if views else ""
        scales = rec.get("image_scales") or {}
        if scales:
            shown = ", ".join(f"{v:.4g}" for v in scales.values())
            seen = f" through one view at image scale {shown} per px (depth unobservable)"
        say(
            f"[green]calibrated[/] {q(rec['identity'])} from {len(tracks)} session(s){seen}, "
            f"{rec['n_frames']} frames, {rec['iterations']} iterations "
            f"({'converged' if rec['converged'] else 'NOT converged'}): "
            f"{'reprojection' if views else 'keypoint'} RMS {cal.rms_before:.4g} -> "
            f"{cal.rms_after:.4g} {rec.get('residual_unit') or plan.unit or ''}, global scale "
            f"{cal.global_scale:.4f} +- {rec['global_scale']['std']:.4f}; wrote {q(out)}"
        )
        for seg in rec["segments"]:
            if abs(seg["scale"] - cal.global_scale) > 0.02 or not seg["observed"]:
                note = "" if seg["observed"] else " (not observed: the template's proportion)"
                say(
                    f"  {q(seg['joint'])}: scale {seg['scale']:.3f} +- {seg['scale_std']:.3f}{note}"
                )


def calibrated_plan(calibration: Path, body_plan: str | None) -> Any:
    """The plan of ``--calibration``, checked against ``--body-plan`` when both are given."""
    from pipeline.calibrate import calibrated_plan as checked

    if body_plan is None or str(calibration) == body_plan:
        return checked(calibration)
    return checked(calibration, load_plan(body_plan), f"--body-plan {body_plan}")
