"""``kinefit body-plan convert|edit|combine|map``: bring your own body.

Thin shells over :mod:`pipeline.bodyplan.importers`, :mod:`pipeline.bodyplan.editing` and
:mod:`pipeline.bodyplan.keypoint_map`; they add the commands to the ``body-plan`` group
of :mod:`flows.cli.config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli.common import Verbose, guard, load_plan
from flows.cli.config import body_plan_app
from flows.cli.output import err_console, q, say

OutOption = Annotated[Path, typer.Option("--output", "-o", help="Body-plan JSON to write.")]


@body_plan_app.command("convert")
def convert(
    model: Annotated[Path, typer.Argument(help="MJCF .xml, URDF .urdf, OpenSim .osim or .bvh.")],
    output: OutOption,
    format: Annotated[
        str | None, typer.Option(help="mjcf, urdf, osim or bvh (default: by suffix, content).")
    ] = None,
    sites: Annotated[
        str | None, typer.Option(help="MJCF: sites as keypoints, 'all' or comma-separated.")
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Refuse couplings (mimic, splines, equalities) instead.")
    ] = False,
    unit: Annotated[str | None, typer.Option(help="MJCF, BVH: the model's length unit.")] = None,
    free_base: Annotated[bool, typer.Option(help="URDF: make the root link free.")] = False,
    merge_fixed: Annotated[bool, typer.Option(help="URDF: remove fixed-joint links.")] = False,
    rotations: Annotated[
        str | None, typer.Option(help="BVH: 'ball' (default) or 'euler' for 3 channels.")
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Import a model file as a body plan and write it as JSON."""
    with guard(verbose):
        from pipeline.bodyplan import load_body_plan, save_body_plan
        from pipeline.bodyplan.importers import guess_format, plan_unit

        chosen = format or guess_format(model)
        options: dict[str, Any] = {}
        if sites is not None:
            options["sites"] = True if sites == "all" else [s for s in sites.split(",") if s]
        if strict:
            options["strict"] = True
        if unit is not None:
            options["unit"] = unit
        if free_base:
            options["fixed_base"] = False
        if merge_fixed:
            options["merge_fixed"] = True
        if rotations is not None:
            options["rotations"] = rotations
        plan = load_body_plan(model, format=chosen, **options)
        save_body_plan(plan, output)
        unit_name = plan_unit(plan) or "unknown"
        say(
            f"[green]wrote[/] {q(output)}: {q(chosen)} -> {plan.n_joints} joints, "
            f"{plan.n_dofs} DOFs, {'fixed' if plan.fixed_base else 'free'} base, "
            f"lengths in {q(unit_name)}"
        )


@body_plan_app.command("edit")
def edit(
    plan: Annotated[str, typer.Argument(help="Body-plan JSON (or a model file), or 'mannequin'.")],
    output: OutOption,
    remove: Annotated[
        list[str] | None, typer.Option(help="Remove a joint, keeping its children (repeatable).")
    ] = None,
    rename: Annotated[
        list[str] | None, typer.Option(help="Rename a joint: OLD=NEW (repeatable).")
    ] = None,
    prefix: Annotated[str | None, typer.Option(help="Prefix every joint and DOF name.")] = None,
    reroot: Annotated[str | None, typer.Option(help="Make this joint the root.")] = None,
    no_limits: Annotated[bool, typer.Option(help="Drop every DOF limit.")] = False,
    verbose: Verbose = False,
) -> None:
    """Edit a body plan (remove, rename, prefix, re-root, unlimit, in that order)."""
    with guard(verbose):
        from pipeline.bodyplan import editing, rerooting, save_body_plan
        from pipeline.config.pairs import parse_pairs

        body = load_plan(plan)
        for name in remove or []:
            body = editing.remove_joint(body, name)
        if rename:
            body = editing.rename(body, parse_pairs(rename, "--rename", form="OLD=NEW"))
        if prefix:
            body = editing.place(body, prefix)
        if reroot:
            body = rerooting.reroot(body, reroot)
        if no_limits:
            body = editing.without_limits(body)
        save_body_plan(body, output)
        say(f"[green]wrote[/] {q(output)}: {body.n_joints} joints, {body.n_dofs} DOFs")


@body_plan_app.command("combine")
def combine(
    plans: Annotated[list[str], typer.Argument(help="Body plans (files or 'mannequin').")],
    output: OutOption,
    prefix: Annotated[
        list[str] | None, typer.Option(help="One name prefix per plan (default a_, b_, ...).")
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Put several plans side by side in one (several animals, a robot beside a human)."""
    with guard(verbose):
        from pipeline.bodyplan import editing, save_body_plan

        prefixes = prefix or [f"{chr(ord('a') + i)}_" for i in range(len(plans))]
        body = editing.combine([load_plan(p) for p in plans], prefixes)
        save_body_plan(body, output)
        say(f"[green]wrote[/] {q(output)}: {body.n_joints} joints, {body.n_dofs} DOFs")


@body_plan_app.command("map")
def map_keypoints(
    tracks: Annotated[Path, typer.Argument(help="A tracks file (any format ingest reads).")],
    plan: Annotated[str, typer.Argument(help="Body plan (file or 'mannequin').")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the YAML here (default: print).")
    ] = None,
    format: Annotated[str | None, typer.Option(help="Tracks format (default: guessed).")] = None,
    verbose: Verbose = False,
) -> None:
    """Propose a track-keypoint -> joint map by name, as the YAML the fit takes."""
    with guard(verbose):
        from pipeline.bodyplan.keypoint_map import propose_keypoint_map
        from pipeline.errors import TracksError
        from pipeline.tracks import read_tracks

        if format is None and (tracks / "zarr.json").is_file():  # a store, multi-view too
            from pipeline.store import open_tracks

            ds = open_tracks(tracks)
        else:
            try:
                ds = read_tracks(tracks, format)
            except TracksError as exc:
                if "rate" not in str(exc) and "fps" not in str(exc):
                    raise
                ds = read_tracks(tracks, format, fps=1.0)  # only the names are needed
        names = [str(k) for k in ds["keypoint"].values]
        proposal = propose_keypoint_map(names, load_plan(plan))
        text = proposal.to_yaml()
        if output is None:
            typer.echo(text, nl=False)
        else:
            from pipeline.store.atomic import write_text_atomic

            write_text_atomic(output, text)  # ends in a newline
            say(f"[green]wrote[/] {q(output)}: {len(proposal.mapping)} of {len(names)} keypoints")
        if proposal.unmatched:
            err_console.print(f"unmatched track keypoints: {q(', '.join(proposal.unmatched))}")
        for k, joints in proposal.ambiguous.items():
            err_console.print(f"ambiguous: {q(k)} -> one of {q(', '.join(joints))}")
