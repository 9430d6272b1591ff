"""Anipose 3D triangulation CSVs (``pose-3d/*.csv``).

Layout (one header row, one row per frame)::

    nose_x, nose_y, nose_z, nose_error, nose_ncams, nose_score, ear_x, ..., ear_score,
    M_00, M_01, ..., M_22, center_0, center_1, center_2, fnum

Keypoints keep the file's order. ``<kp>_score`` becomes ``confidence``; ``<kp>_error``
(reprojection error) and ``<kp>_ncams`` are not kept. When the Anipose config sets
``triangulation.axes`` and ``reference_point``, the positions are aligned:
``p = p_raw @ M.T - center``; ``undo_alignment=True`` gives back the triangulated
positions ``p_raw = (p + center) @ M``. ``fnum`` gives the frame numbers.

Units: positions are in the unit of the calibration board's squares
(``board_square_side_length`` in the Anipose config, typically mm), which the CSV does not
record: pass the ``unit`` option from the run config; without it ``unit`` is
``"unknown"``. The up axis depends on the configured alignment: the ``up_axis`` option or
None (unknown). The frame rate
is not in the file: ``fps=`` is required.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers.reader_helpers import (
    csv_rows,
    fail,
    frame_time,
    head_text,
    numeric_rows,
    resolve_fps,
)
from pipeline.tracks.schema import make_tracks_dataset
from pipeline.tracks.units import UNKNOWN

FORMAT = "anipose"
SUFFIXES = (".csv",)
SOFTWARE = "Anipose"
PER_KEYPOINT = ("x", "y", "z", "error", "ncams", "score")
M_COLUMNS = tuple(f"M_{i}{j}" for i in range(3) for j in range(3))
CENTER_COLUMNS = tuple(f"center_{i}" for i in range(3))
LAYOUT = (
    "an Anipose 3D CSV has <kp>_x, <kp>_y, <kp>_z, <kp>_error, <kp>_ncams, <kp>_score per "
    "keypoint, then M_00..M_22, center_0..center_2, fnum"
)


def _keypoints(path: Path, header: list[str]) -> list[str]:
    """Return the keypoints in file order, checking that every column is accounted for."""
    known = set(M_COLUMNS) | set(CENTER_COLUMNS) | {"fnum"}
    keypoints: list[str] = []
    for name in header:
        if name in known:
            continue
        base, _, suffix = name.rpartition("_")
        if suffix not in PER_KEYPOINT or not base:
            raise fail(path, f"unexpected column {name!r}; {LAYOUT}")
        if base not in keypoints:
            keypoints.append(base)
    for kp in keypoints:
        absent = [f"{kp}_{a}" for a in ("x", "y", "z") if f"{kp}_{a}" not in header]
        if absent:
            raise fail(path, f"keypoint {kp!r} lacks the column(s) {absent}; {LAYOUT}")
    if not keypoints:
        raise fail(path, f"no keypoint columns; {LAYOUT}")
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise fail(path, f"duplicated columns {dupes}")
    return keypoints


def parse(path: str | Path) -> dict:
    """Read an Anipose CSV into arrays.

    Returns
    -------
    dict
        ``position (n_frames, 3, n_keypoints)`` as in the file (aligned frame),
        ``confidence (n_frames, n_keypoints)`` or None, ``keypoints``, ``frames`` (or
        None), ``M (3, 3)`` and ``center (3,)`` (None when the columns are absent).
    """
    path = Path(path)
    rows = csv_rows(path)
    if not rows:
        raise fail(path, f"empty file; {LAYOUT}")
    header = [c.strip() for c in rows[0]]
    keypoints = _keypoints(path, header)
    values = numeric_rows(path, rows[1:], len(header), range(len(header)), 2)
    col = {name: j for j, name in enumerate(header)}
    position = np.stack(
        [np.stack([values[:, col[f"{kp}_{a}"]] for a in "xyz"], axis=1) for kp in keypoints],
        axis=2,
    )
    has_score = [f"{kp}_score" in col for kp in keypoints]
    if any(has_score) and not all(has_score):
        raise fail(path, "some keypoints have a _score column and others do not")
    confidence = (
        np.stack([values[:, col[f"{kp}_score"]] for kp in keypoints], axis=1)
        if all(has_score)
        else None
    )
    M = center = None
    if any(c in col for c in M_COLUMNS + CENTER_COLUMNS):
        absent = [c for c in M_COLUMNS + CENTER_COLUMNS if c not in col]
        if absent:
            raise fail(path, f"alignment columns {absent} are missing; {LAYOUT}")
        m_rows = values[:, [col[c] for c in M_COLUMNS]]
        c_rows = values[:, [col[c] for c in CENTER_COLUMNS]]
        if np.ptp(m_rows, axis=0).max() > 1e-9 or np.ptp(c_rows, axis=0).max() > 1e-9:
            raise fail(path, "M_* and center_* change between rows; Anipose writes constants")
        M, center = m_rows[0].reshape(3, 3), c_rows[0]
    frames = values[:, col["fnum"]] if "fnum" in col else None
    if frames is not None and not np.all(np.isfinite(frames) & (frames == np.round(frames))):
        raise fail(path, "fnum holds values that are not frame numbers")
    return {
        "position": position,
        "confidence": confidence,
        "keypoints": keypoints,
        "frames": frames,
        "M": M,
        "center": center,
    }


def sniff(path: str | Path) -> bool:
    """Return True for a CSV whose header has ``<kp>_x/_y/_z`` and ``fnum`` or ``M_00``."""
    first = head_text(path, 16384).splitlines()[:1]
    if not first:
        return False
    header = {c.strip() for c in first[0].split(",")}
    has_xyz = any(h.endswith("_x") and h[:-2] + "_z" in header for h in header)
    return has_xyz and ("fnum" in header or "M_00" in header)


def read(
    path: str | Path,
    *,
    fps: float | None = None,
    undo_alignment: bool = False,
    individual: str | None = None,
) -> xr.Dataset:
    """Read an Anipose 3D CSV.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    fps : float
        Frames per second (not in the file): required.
    undo_alignment : bool
        Return triangulated positions before Anipose's alignment,
        ``p_raw = (p + center) @ M``.
    individual : str, optional
        Name of the one individual (default from the schema).

    Returns
    -------
    xarray.Dataset
        One individual; ``position (time, space=[x, y, z], keypoint, individual)`` in
        the board's unit (``"unknown"``), ``confidence`` = ``_score``, ``time`` =
        ``fnum / fps`` seconds; attrs record ``anipose_M``, ``anipose_center`` and
        ``alignment`` (``"anipose"`` or ``"undone"``).

    Raises
    ------
    TracksError
        Unexpected or missing columns, wrong column count, non-numeric cells, changing
        M/center, ``undo_alignment`` without M/center, no ``fps``.
    """
    path = Path(path)
    arrays = parse(path)
    rate = resolve_fps(path, SOFTWARE, None, fps)
    position, M, center = arrays["position"], arrays["M"], arrays["center"]
    if undo_alignment:
        if M is None:
            raise fail(path, "undo_alignment=True but the file has no M_* / center_* columns")
        position = np.einsum("tjk,ji->tik", position + center[None, :, None], M)
    attrs = {
        "source_format": FORMAT,
        "alignment": "undone" if undo_alignment else ("anipose" if M is not None else "none"),
        "anipose_M": None if M is None else M.tolist(),
        "anipose_center": None if center is None else center.tolist(),
        "unit_note": "unit of the calibration board squares (Anipose config), given by unit=",
    }
    return make_tracks_dataset(
        position[..., np.newaxis],
        None if arrays["confidence"] is None else arrays["confidence"][..., np.newaxis],
        keypoints=arrays["keypoints"],
        individuals=None if individual is None else [individual],
        fps=rate,
        time=frame_time(path, arrays["frames"], position.shape[0], rate),
        space=("x", "y", "z"),
        source_software=SOFTWARE,
        source_file=path,
        unit=UNKNOWN,
        extra_attrs=attrs,
    )
