"""Ingest one raw session file into a tracks store, skipping it when nothing changed.

:func:`ingest_session` reads a session's raw file with the reader registry
(:func:`pipeline.tracks.read_tracks`) and writes it with
:func:`pipeline.store.write_tracks` (atomically: a failed read or write leaves any
previous store untouched). The store records an ``ingest_fingerprint``: the sha256 of the
raw file's bytes, the reader, its options, the fallback fps, the chunking and kinefit's
version. A store whose fingerprint matches is current and is not rewritten.

Remote files (fsspec URLs) are copied to a local cache first, because the readers work on
local files.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.archive.discover import SessionSource
from pipeline.archive.reader_settings import reader_settings
from pipeline.archive.view_files import Views, read_views, views_fingerprint
from pipeline.provenance.fingerprint import kinefit_version, store_signature
from pipeline.provenance.hashing import json_sha256, known_sha256, text_sha256, tree_sha256
from pipeline.store import DEFAULT_CHUNK_FRAMES, write_tracks
from pipeline.store.attrs import store_attrs
from pipeline.tracks import read_tracks

__all__ = ["IngestReport", "ingest_fingerprint", "ingest_session", "ingest_views", "local_copy"]


@dataclass(frozen=True)
class IngestReport:
    """What :func:`ingest_session` did.

    Attributes
    ----------
    session : str
    out : Path
        The tracks store.
    skipped : bool
        The store was current and was left alone.
    n_frames, n_keypoints, n_individuals : int
    fps : float
    seconds : float
        Wall time.
    view_pairing : str
        Multi-view stores: how views paired with cameras (``"name"``, ...), else ``""``.
    views : tuple of (str, str)
        Multi-view stores: (name given, camera) per view, in view order.
    """

    session: str
    out: Path
    skipped: bool
    n_frames: int
    n_keypoints: int
    n_individuals: int
    fps: float
    seconds: float
    view_pairing: str = ""
    views: tuple[tuple[str, str], ...] = ()


def local_copy(url: str, cache: str | Path | None = None) -> Path:
    """A local path for ``url``: itself if local, else a cached copy (fsspec simplecache)."""
    if "://" not in url or url.startswith("file://"):
        return Path(url.removeprefix("file://"))
    import fsspec

    cache = cache or Path(tempfile.gettempdir()) / "kinefit-fsspec-cache"
    fs, path = fsspec.core.url_to_fs(url)
    if fs.isdir(path):
        target = Path(cache) / text_sha256(url)[:16] / Path(path).name
        if not target.exists():
            fs.get(path, str(target), recursive=True)
        return target
    # one folder per URL, the file keeping its name: readers tell formats by suffix
    storage = {"cache_storage": str(Path(cache) / text_sha256(url)[:16]), "same_names": True}
    return Path(fsspec.open_local(f"simplecache::{url}", simplecache=storage))


def ingest_fingerprint(
    source: SessionSource,
    local: Path,
    chunk_frames: int,
    content: str | None = None,
    to_unit: str | None = None,
) -> str:
    """sha256 of the raw content and everything that shapes the tracks store.

    ``content`` is the raw content's sha256 when already known (hashed otherwise);
    ``to_unit`` the length unit the tracks are converted to (none: left out, so stores
    ingested without conversion keep their fingerprint).
    """
    recipe: dict[str, Any] = {
        "content": content or tree_sha256(local),
        "format": source.format,
        "fps": source.fps,
        "options": {k: str(v) for k, v in sorted(source.options.items())},
        "chunk_frames": chunk_frames,
        "session": source.name,
        "kinefit": kinefit_version(),
    }
    if to_unit is not None:
        recipe["to_unit"] = to_unit
    return json_sha256(recipe)


def ingest_session(
    source: SessionSource,
    out: str | Path,
    chunk_frames: int = DEFAULT_CHUNK_FRAMES,
    *,
    force: bool = False,
    to_unit: str | None = None,
) -> IngestReport:
    """Read a session's raw file into the tracks store ``out`` unless it is current.

    Parameters
    ----------
    source : SessionSource
        The raw file and how to read it.
    out : str or Path
        Tracks store to write (``<tracks root>/<session>.zarr``).
    chunk_frames : int
        Frames per zarr chunk.
    force : bool
        Rewrite even if the store is current.
    to_unit : str, optional
        Convert positions to this length unit (``"m"``, ``"mm"``, ...; see
        :func:`pipeline.tracks.units.convert_length`); the file's unit (or the ``unit``
        reader option) must be a known length unit.

    Returns
    -------
    IngestReport

    Raises
    ------
    FileNotFoundError
        The raw file does not exist.
    FileExistsError
        ``out`` exists and is not a tracks store.
    pipeline.tracks.TracksError
        The file is malformed (nothing is written, an existing store is kept).
    """
    if source.views:
        return ingest_views(
            {v: local_copy(u) for v, u in source.views.items()},
            local_copy(source.calibration or ""),
            out,
            session=source.name,
            chunk_frames=chunk_frames,
            force=force,
            unit=source.options.get("unit"),
            frame_offset=source.frame_offset or None,
            fps=source.fps,
            format=source.format,
            options={k: v for k, v in source.options.items() if k != "unit"},
        )
    t0 = time.perf_counter()
    out = Path(out)
    local = local_copy(source.url)
    if not local.exists():
        raise FileNotFoundError(f"{source.url}: no such session file (session {source.name!r})")
    attrs = store_attrs(out)
    # untouched since the last ingest: reuse its content hash instead of reading the file
    signature = store_signature(local)  # size, inode, mtime, ctime of the raw file(s)
    content = attrs.get("source_sha256") if attrs.get("source_signature") == signature else None
    content = content or tree_sha256(local)
    fingerprint = ingest_fingerprint(source, local, chunk_frames, content, to_unit)
    if out.exists() and attrs.get("ds_type") != "poses":
        raise FileExistsError(
            f"{out}: exists and is not a tracks store; refusing to replace it "
            f"(session {source.name!r})"
        )
    if not force and attrs.get("ingest_fingerprint") == fingerprint:
        return IngestReport(
            source.name,
            out,
            True,
            int(attrs.get("n_frames", 0)),
            int(attrs.get("n_keypoints", 0)),
            int(attrs.get("n_individuals", 0)),
            float(attrs.get("fps") or 0.0),
            time.perf_counter() - t0,
        )
    how = reader_settings(
        format=source.format, fps=source.fps, to_unit=to_unit, options=source.options
    )
    with known_sha256(local, content):  # the reader records the digest: not hashed again
        ds = read_tracks(local, format=how.format, fps=how.fps, to_unit=how.to_unit, **how.options)
    sizes = ds.sizes
    ds.attrs.update(
        session=source.name,
        source_file=source.url,
        ingest_fingerprint=fingerprint,
        source_signature=signature,
        source_sha256=content,
        n_frames=sizes["time"],
        n_keypoints=sizes["keypoint"],
        n_individuals=sizes["individual"],
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_tracks(ds, out, chunk_frames=chunk_frames, overwrite=True)
    return IngestReport(
        source.name,
        out,
        False,
        sizes["time"],
        sizes["keypoint"],
        sizes["individual"],
        float(ds.attrs["fps"]),
        time.perf_counter() - t0,
    )


def _pairing(attrs: Mapping[str, Any]) -> dict[str, Any]:
    names, cameras = attrs.get("view_names") or [], [c["name"] for c in attrs.get("cameras", [])]
    return {
        "view_pairing": str(attrs.get("view_pairing") or ""),
        "views": tuple(zip(map(str, names), cameras, strict=False)),
    }


def ingest_views(
    views: Views,
    calibration: str | Path,
    out: str | Path,
    *,
    session: str | None = None,
    chunk_frames: int = DEFAULT_CHUNK_FRAMES,
    force: bool = False,
    unit: str | None = None,
    frame_offset: dict[str, int] | None = None,
    fps: float | None = None,
    format: str | None = None,
    options: dict[str, Any] | None = None,
) -> IngestReport:
    """Read one 2D file per camera plus the calibration into a multi-view tracks store.

    Parameters
    ----------
    views : mapping of str to path, or sequence of paths
        View name -> 2D tracks file or folder, or the files alone; paired with the
        calibration's cameras as :func:`pipeline.archive.view_files.read_views` says.
    calibration : str or Path
        Calibration file (:func:`pipeline.cameras.read_calibration`).
    out : str or Path
        Multi-view tracks store to write (:mod:`pipeline.tracks.multiview`).
    session : str, optional
        Session name (default: ``out``'s stem).
    chunk_frames : int
    force : bool
        Rewrite even if the store is current (same files, calibration and settings).
    unit, frame_offset, fps, format, options
        As in :func:`pipeline.archive.view_files.read_views`.

    Returns
    -------
    IngestReport

    Raises
    ------
    CameraError, TracksError
        See :func:`~pipeline.archive.view_files.read_views`; nothing is written.
    """
    t0 = time.perf_counter()
    out = Path(out)
    session = session or out.name.split(".")[0]
    options = dict(options or {})
    settings = {
        "unit": unit,
        "frame_offset": sorted((frame_offset or {}).items()),
        "fps": fps,
        "format": format,
        "options": sorted(options.items()),
        "chunk_frames": chunk_frames,
        "session": session,
        "kinefit": kinefit_version(),
    }
    fingerprint = views_fingerprint(views, calibration, settings)
    attrs = store_attrs(out)
    if out.exists() and attrs.get("ds_type") != "poses":
        raise FileExistsError(f"{out}: exists and is not a tracks store; refusing to replace it")
    if not force and attrs.get("ingest_fingerprint") == fingerprint:
        return IngestReport(
            session,
            out,
            True,
            int(attrs.get("n_frames", 0)),
            int(attrs.get("n_keypoints", 0)),
            int(attrs.get("n_individuals", 0)),
            float(attrs.get("fps") or 0.0),
            time.perf_counter() - t0,
            **_pairing(attrs),
        )
    ds = read_views(
        views,
        calibration,
        unit=unit,
        frame_offset=frame_offset,
        fps=fps,
        format=format,
        session=session,
        **options,
    )
    sizes = ds.sizes
    ds.attrs.update(
        ingest_fingerprint=fingerprint,
        n_frames=sizes["time"],
        n_keypoints=sizes["keypoint"],
        n_individuals=sizes["individual"],
        n_views=sizes["view"],
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_tracks(ds, out, chunk_frames=chunk_frames, overwrite=True)
    return IngestReport(
        session,
        out,
        False,
        sizes["time"],
        sizes["keypoint"],
        sizes["individual"],
        float(ds.attrs["fps"] or 0.0),
        time.perf_counter() - t0,
        **_pairing(ds.attrs),
    )
