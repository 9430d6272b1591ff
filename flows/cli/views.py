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
from typing import Any

import typer

from flows.cli.common import q, say

__all__ = ["ingest_views_command", "parse_pairs"]


def parse_pairs(items: Sequence[str], hint: str, value=str) -> dict[str, Any]:
    """``["camA=a.csv", ...]`` -> ``{"camA": "a.csv"}``; a bad item names ``hint``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise typer.BadParameter(f"{item!r}; expected NAME=VALUE", param_hint=hint)
        if key.strip() in out:
            raise typer.BadParameter(f"{key.strip()!r} given twice", param_hint=hint)
        try:
            out[key.strip()] = value(raw.strip())
        except ValueError as exc:
            raise typer.BadParameter(f"{item!r}: {exc}", param_hint=hint) from exc
    return out


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
    from pipeline.store.fit import store_attrs

    if calibration is None:
        raise typer.BadParameter("--views needs --calibration FILE", param_hint="--calibration")
    bare = [item for item in pairs if "=" not in item]
    if bare and len(bare) != len(pairs):
        raise typer.BadParameter(
            "name every view (CAMERA=PATH) or none (PATH ...), not some", param_hint="--views"
        )
    for item in bare:
        if not Path(item).exists():
            raise typer.BadParameter(
                f"{item!r}: no such file or folder; expected NAME=VALUE (CAMERA=PATH) or PATH",
                param_hint="--views",
            )
    views: Any = list(bare) if bare else parse_pairs(pairs, "--views")
    offset = parse_pairs(offsets or (), "--offset", int) if offsets else None
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
