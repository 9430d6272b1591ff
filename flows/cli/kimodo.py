"""``kinefit export kimodo``: a fit store as Kimodo constraints.

Registered on the export group (:mod:`flows.cli.export`). The command is a thin shell
around :func:`pipeline.export.kimodo.export_kimodo`; errors print one message
and exit with status 1 (the CLI's shared guard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import Verbose, guard
from flows.cli.output import console

Frames = Annotated[
    str | None, typer.Option(help="Keyframes: frame numbers '0,45,90' or 'every:N' (30 fps).")
]


def kimodo(
    fit: Annotated[Path, typer.Argument(help="Fit zarr store (from kinefit fit).")],
    skeleton_file: Annotated[
        Path, typer.Option("--skeleton-file", help="Kimodo skeletons JSON (skeletons.json).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Constraints JSON to write.")],
    skeleton: Annotated[str, typer.Option(help="Kimodo skeleton name.")] = "somaskel30",
    meta: Annotated[
        Path | None, typer.Option(help="meta.json to write (default: beside --out).")
    ] = None,
    text: Annotated[str, typer.Option(help="Prompt text written to meta.json.")] = "",
    individual: Annotated[str | None, typer.Option(help="Individual of the fit.")] = None,
    name_map: Annotated[
        str | None,
        typer.Option(
            help="Plan joint -> Kimodo joint table: a built-in ('mannequin') or a YAML file. "
            "Not needed when the fitted plan is the Kimodo skeleton."
        ),
    ] = None,
    root2d: Annotated[
        str, typer.Option(help="Root path: dense, waypoints (every --root2d-every) or off.")
    ] = "dense",
    root2d_every: Annotated[int, typer.Option(help="Waypoint spacing (frames).")] = 30,
    heading: Annotated[
        bool, typer.Option(help="Write global_root_heading on the root path.")
    ] = True,
    fullbody: Frames = None,
    left_hand: Frames = None,
    right_hand: Frames = None,
    left_foot: Frames = None,
    right_foot: Frames = None,
    end_effector: Frames = None,
    end_effector_joints: Annotated[
        str | None,
        typer.Option(help="Comma list from LeftHand, RightHand, LeftFoot, RightFoot, Hips."),
    ] = None,
    unit: Annotated[str | None, typer.Option(help="Length unit of the fit (override).")] = None,
    up_axis: Annotated[str | None, typer.Option(help="Up axis of the fit (override).")] = None,
    fps: Annotated[float | None, typer.Option(help="Frame rate if the fit lacks it.")] = None,
    floor: Annotated[
        str, typer.Option(help="'lowest' (lowest joint on y=0) or the floor height.")
    ] = "lowest",
    start: Annotated[float | None, typer.Option(help="Start time (s) of the fit.")] = None,
    stop: Annotated[float | None, typer.Option(help="Stop time (s) of the fit.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace existing files.")] = False,
    verbose: Verbose = False,
) -> None:
    """Write one individual of a fit store as a Kimodo constraints file plus meta.json."""
    with guard(verbose):
        from pipeline.export.kimodo import (
            ExportConfig,
            FrameSpec,
            KimodoError,
            export_kimodo,
            load_kimodo_skeleton,
        )
        from pipeline.export.kimodo import name_map as resolve_name_map

        target = load_kimodo_skeleton(skeleton_file, skeleton)

        try:
            floor_value: float | str = "lowest" if floor == "lowest" else float(floor)
        except ValueError:
            raise KimodoError(f"--floor: expected 'lowest' or a number, got {floor!r}") from None
        joints = tuple(j.strip() for j in (end_effector_joints or "").split(",") if j.strip())
        config = ExportConfig(
            root2d=root2d,  # type: ignore[arg-type]
            root2d_every=root2d_every,
            root2d_heading=heading,
            fullbody=FrameSpec.parse(fullbody, "--fullbody"),
            left_hand=FrameSpec.parse(left_hand, "--left-hand"),
            right_hand=FrameSpec.parse(right_hand, "--right-hand"),
            left_foot=FrameSpec.parse(left_foot, "--left-foot"),
            right_foot=FrameSpec.parse(right_foot, "--right-foot"),
            end_effector=FrameSpec.parse(end_effector, "--end-effector"),
            end_effector_joints=joints,
            text=text,
            individual=individual,
            name_map=None if name_map is None else resolve_name_map(name_map, skeleton),
            unit=unit,
            up_axis=up_axis,
            fps=fps,
            floor=floor_value,  # type: ignore[arg-type]
            start=start,
            stop=stop,
        )
        report = export_kimodo(
            fit, skeleton_file, target, out, config, meta=meta, overwrite=overwrite
        )
        entries = ", ".join(f"{kind} {n}" for kind, n in report.frames.items())
        console.print(
            f"[green]wrote[/] {report.out} and {report.meta}: "
            f"{report.motion.n_frames} frames at 30 fps on {skeleton} "
            f"({len(report.segments)} segment(s)); constrained frames: {entries}",
            highlight=False,
            soft_wrap=True,
        )
