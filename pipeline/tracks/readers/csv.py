"""Reader for CSV files of named keypoints in long ("tidy") layout.

One row per frame, individual and keypoint; a header names the columns
(case-insensitive, any order; other columns are ignored)::

    frame,individual,keypoint,x,y,z,confidence
    0,fly0,LFCoxa,0.12,0.40,0.03,0.98
    0,fly0,LFFemur,0.21,0.44,0.01,0.95
    1,fly0,LFCoxa,0.13,0.40,0.03,0.97

- ``keypoint``, ``x``, ``y`` (required); ``z`` (optional: without it the tracks are 2-D);
- ``frame`` (integer frame number) or ``time`` (seconds): one of them is required;
- ``individual`` (optional, default one individual ``individual_0``);
- ``confidence`` (optional).

Frames between the first and last frame number that have no rows are missing (NaN);
keypoints missing from a frame are missing. A duplicated (frame, individual, keypoint) row
is an error. Keypoint and individual order is their first appearance in the file.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.tracks.schema import TracksError, make_tracks_dataset
from pipeline.tracks.units import UNKNOWN

FORMAT = "csv"
SUFFIXES: tuple[str, ...] = (".csv", ".tsv")
REQUIRED: tuple[str, ...] = ("keypoint", "x", "y")


def _header(path: Path) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        line = handle.readline()
    sep = "\t" if "\t" in line else ","
    return [c.strip().lower() for c in line.strip().split(sep)]


#: Frames the gaps of a frame column may add: beyond this many times the frames present
#: (and more than MAX_GAP_FRAMES in all), the frame column is taken to be corrupt.
GAP_FACTOR, MAX_GAP_FRAMES = 10, 100_000


def _check_row_lengths(path: Path, n_fields: int) -> None:
    """Refuse rows with fewer or more fields than the header (pandas pads them with NaN)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:  # the delimiter pandas' sep=None found: csv.Sniffer on the header line
        dialect: Any = csv.Sniffer().sniff(text.split("\n", 1)[0])
    except csv.Error:
        dialect = csv.excel
    for number, row in enumerate(csv.reader(io.StringIO(text), dialect), start=1):
        if number > 1 and len(row) != n_fields and any(cell.strip() for cell in row):
            raise TracksError(
                f"{path}: line {number} has {len(row)} fields, the header has {n_fields} "
                "(truncated or malformed file)"
            )


def _check_span(path: Path, n_frames: int, present: int, first: int) -> None:
    """Refuse frame numbers whose gaps would make a session mostly of missing frames."""
    if n_frames > max(GAP_FACTOR * present, present + MAX_GAP_FRAMES):
        raise TracksError(
            f"{path}: column 'frame' spans {n_frames} frames ({first} to "
            f"{first + n_frames - 1}) but only {present} of them have rows; a corrupt frame "
            "column? (gaps between frame numbers become missing frames)"
        )


def _numbers(path: Path, table: pd.DataFrame, column: str) -> np.ndarray:
    """A column as float64 (empty = NaN); a cell that is not a number names its line."""
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(values) & table[column].notna().to_numpy())
    if bad.size:
        row = int(bad[0])
        raise TracksError(
            f"{path}: line {row + 2}, column {column!r}: {table[column].iloc[row]!r} is not a "
            "number"
        )
    return values


def _check_columns(path: Path, columns: list[str]) -> None:
    """Refuse a header without the required columns, listing what it has."""
    missing = [c for c in REQUIRED if c not in columns]
    if not {"frame", "time"} & set(columns):
        missing.append("frame or time")
    if missing:
        shown = columns if len(columns) <= 12 else [*columns[:12], "..."]
        raise TracksError(
            f"{path}: not a long-layout keypoint CSV: missing columns {missing}; its first "
            f"line has {shown}; expected frame|time, [individual,] keypoint, x, y[, z]"
            "[, confidence] (another format? leave --format out to detect it)"
        )


def sniff(path: str | Path) -> bool:
    """Return True if the header names ``keypoint``, ``x``, ``y`` and ``frame`` or ``time``."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        columns = set(_header(path))
    except OSError:
        return False
    return set(REQUIRED) <= columns and bool({"frame", "time"} & columns)


def read(path: str | Path, *, fps: float | None = None) -> xr.Dataset:
    """Read a long-layout keypoint CSV (see the module docstring).

    Parameters
    ----------
    path : str or Path
        ``.csv`` (comma) or ``.tsv`` (tab) file.
    fps : float, optional
        Frames per second (a CSV does not record it).

    Returns
    -------
    xarray.Dataset
        Unit ``"unknown"`` (a CSV does not record it: the ``unit`` option says).
    """
    path = Path(path)
    _check_columns(path, _header(path))
    try:
        table = pd.read_csv(path, sep=None, engine="python")
    except (pd.errors.ParserError, csv.Error, UnicodeDecodeError) as err:
        raise TracksError(f"{path}: not a readable keypoint CSV ({err})") from None
    _check_row_lengths(path, len(table.columns))
    table.columns = [str(c).strip().lower() for c in table.columns]
    _check_columns(path, list(table.columns))
    if "individual" not in table.columns:
        table["individual"] = "individual_0"
    space = ("x", "y", "z") if "z" in table.columns else ("x", "y")
    keypoints = list(pd.unique(table["keypoint"].astype(str)))
    individuals = list(pd.unique(table["individual"].astype(str)))
    if "frame" in table.columns:
        frame = table["frame"].to_numpy()
        if not np.issubdtype(frame.dtype, np.integer):
            raise TracksError(f"{path}: column 'frame' must hold integers, got {frame.dtype}")
        first = int(frame.min())
        rows = frame - first
        n_frames = int(frame.max()) - first + 1
        _check_span(path, n_frames, np.unique(frame).size, first)
        time = None if fps is None else (first + np.arange(n_frames)) / float(fps)
    else:
        stamps = _numbers(path, table, "time")
        time, rows = np.unique(stamps, return_inverse=True)
        n_frames = time.size
    kp = pd.Index(keypoints).get_indexer(table["keypoint"].astype(str))
    ind = pd.Index(individuals).get_indexer(table["individual"].astype(str))
    flat = (rows * len(keypoints) + kp) * len(individuals) + ind
    if np.unique(flat).size != flat.size:
        raise TracksError(f"{path}: duplicated rows for the same frame, individual and keypoint")
    shape = (n_frames, len(keypoints), len(individuals))
    position = np.full((n_frames, len(space), len(keypoints), len(individuals)), np.nan)
    for i, axis in enumerate(space):
        position[rows, i, kp, ind] = _numbers(path, table, axis)
    confidence = None
    if "confidence" in table.columns:
        confidence = np.full(shape, np.nan)
        confidence[rows, kp, ind] = _numbers(path, table, "confidence")
    return make_tracks_dataset(
        position,
        confidence,
        keypoints=keypoints,
        individuals=individuals,
        fps=fps,
        time=time,
        space=space,
        source_software="csv",
        source_file=path,
        unit=UNKNOWN,
    )
