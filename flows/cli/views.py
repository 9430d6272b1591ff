"""``kinefit ingest --views camA=a.csv camB=b.csv --calibration calibration.toml``.

The multi-camera branch of ``kinefit ingest``: view names are the calibration's camera
names (any order); ``--offset camB=2`` says that frame 2 of camB's file is session frame 0.
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
    views = parse_pairs(pairs, "--views")
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
    say(
        f"[green]wrote[/] {q(out)}: {report.n_frames} frames at {report.fps:g} fps, "
        f"{len(views)} views ({', '.join(views)}), {report.n_keypoints} keypoints, "
        f"{report.n_individuals} individual(s)"
    )
