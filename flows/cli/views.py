"""``kinefit ingest --views camA=a.csv camB=b.csv --calibration calibration.toml``.

The multi-camera branch of ``kinefit ingest``: view names are the calibration's camera
names (any order, compared after normalisation: ``cam01`` = ``cam_01``), or views are given
as bare files or folders (``--views pose/cam01_json pose/cam02_json``) and pair by their
names or in sorted order, the pairing printed; ``--offset camB=2`` says that frame 2 of
camB's file is session frame 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli.output import q, say

__all__ = ["Pose2SimConfigOption", "ingest_views_command", "pose2sim_options"]

Pose2SimConfigOption = Annotated[
    Path | None,
    typer.Option(
        help="With --views: a Pose2Sim Config.toml (frame rate and range, pose model, "
        "person association; world Z up); options given here win."
    ),
]


def pose2sim_options(
    config: Path | None, fps: float | None, given: dict[str, Any]
) -> tuple[float | None, dict[str, Any]]:
    """``(fps, reader options)`` with a Pose2Sim config's under the ones given."""
    if config is None:
        return fps, given
    from pipeline.config.pose2sim_project import pose2sim_reader_options

    project = pose2sim_reader_options(config)
    rate = project.pop("fps", None)
    return (fps if fps is not None else rate), {**project, **given}


def ingest_views_command(
    pairs: Sequence[str],
    calibration: Path | None,
    out: Path,
    *,
    unit: str | None,
    offsets: Sequence[str] | None,
    fps: float | None,
    format: str | None,
    options: dict[str, Any],
    chunk_frames: int,
    overwrite: bool,
) -> None:
    """Ingest one 2D file per camera plus the calibration into a multi-view store."""
    from pipeline.archive.ingest import ingest_views
    from pipeline.config.pairs import parse_pairs
    from pipeline.errors import ConfigError
    from pipeline.store.attrs import store_attrs

    if calibration is None:
        raise ConfigError("--views needs --calibration FILE (the cameras' calibration)")
    bare = [item for item in pairs if "=" not in item]
    if bare and len(bare) != len(pairs):
        raise ConfigError("--views: name every view (CAMERA=PATH) or none (PATH ...), not some")
    for item in bare:
        if not Path(item).exists():
            raise ConfigError(
                f"--views {item!r}: no such file or folder; expected CAMERA=PATH or PATH"
            )
    views: Any = list(bare) if bare else parse_pairs(pairs, "--views", form="CAMERA=PATH")
    offset = parse_pairs(offsets, "--offset", int, form="VIEW=N") if offsets else None
    if out.exists() and not overwrite and store_attrs(out).get("ds_type") == "poses":
        raise FileExistsError(f"{out}: already exists; pass --overwrite to replace it")
    report = ingest_views(
        views,
        calibration,
        out,
        unit=unit,
        frame_offset=offset,
        fps=fps,
        format=format,
        options=options,
        chunk_frames=chunk_frames,
        force=True,
    )
    if report.view_pairing and report.view_pairing != "name":
        pairs_text = ", ".join(f"{given} -> {cam}" for given, cam in report.views)
        say(f"paired views with cameras by {report.view_pairing}: {pairs_text}")
    cameras = [cam for _, cam in report.views] or list(views)
    say(
        f"[green]wrote[/] {q(out)}: {report.n_frames} frames at {report.fps:g} fps, "
        f"{len(cameras)} views ({', '.join(map(str, cameras))}), {report.n_keypoints} keypoints, "
        f"{report.n_individuals} individual(s)"
    )
