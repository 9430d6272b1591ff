"""DeepLabCut pose files: ``.csv`` and ``.h5`` (``df_with_missing``), 2D and DLC's own 3D.

Layout (DeepLabCut's pandas table, one row per frame)::

    scorer,      DLC_resnet50_..., DLC_resnet50_..., ...
    individuals, mouse1,           mouse1,           ...   (multi-animal projects only)
    bodyparts,   snout,            snout,            ...
    coords,      x,                y,                likelihood, ...
    0,           12.5,             40.1,             0.98, ...

``coords`` are ``x, y, likelihood`` (2D predictions, pixel coordinates with y pointing
down) or ``x, y, z`` (DeepLabCut's 3D triangulation, in the unit of the calibration
checkerboard, which the file does not record). ``likelihood`` becomes ``confidence``.
Multi-animal files give one individual per ``individuals`` value; keypoints that only
some individuals have (DLC's "unique bodyparts", individual ``single``) are NaN for the
others. The ``.h5`` file is the same table stored by pandas (key ``df_with_missing``) and
needs PyTables: the optional extra ``dlc``.

Attrs: ``unit`` is ``"px"`` for 2D and ``"unknown"`` for 3D, ``up_axis`` ``"-y"`` for 2D
(image rows grow downwards) and None (unknown) for 3D; the registry's ``unit`` and
``up_axis`` options say them for 3D files. DeepLabCut files do not record the frame rate:
``fps=`` is required.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers.reader_helpers import (
    csv_rows,
    fail,
    frame_time,
    head_text,
    is_hdf5,
    missing_extra,
    numeric_rows,
    resolve_fps,
)
from pipeline.tracks.schema import make_tracks_dataset
from pipeline.tracks.units import UNKNOWN

FORMAT = "dlc"
SUFFIXES = (".csv", ".h5", ".hdf5")
SOFTWARE = "DeepLabCut"
H5_KEY = "df_with_missing"
#: DeepLabCut's multi-animal tracklet files (``*_el.h5``, ``*_bx.h5``) store the table here.
TRACKLETS_KEY = "tracks"
H5_KEYS = (H5_KEY, TRACKLETS_KEY)
LEVELS_4 = ("scorer", "individuals", "bodyparts", "coords")
LEVELS_3 = ("scorer", "bodyparts", "coords")
COORDS = ("x", "y", "z", "likelihood")
#: LightningPose appends a ("set", "", "") column (train/validation/test split).
SPLIT_COLUMN = "set"


@dataclass(frozen=True)
class DlcTable:
    """A DeepLabCut table as read from disk.

    Attributes
    ----------
    columns : list of (scorer, individual, bodypart, coord)
        One per data column; ``individual`` is ``None`` in single-animal files.
    values : ndarray, shape (n_frames, n_columns), float64
        The numbers, NaN where the cell is empty.
    frames : ndarray of int, shape (n_frames,), or None
        Frame numbers from the index column, None when the index is not integers.
    """

    columns: list[tuple[str, str | None, str, str]]
    values: np.ndarray
    frames: np.ndarray | None


def _int_frames(index: Sequence[object]) -> np.ndarray | None:
    try:
        frames = np.array([int(str(v)) for v in index], dtype=np.int64)
    except ValueError:
        return None
    return frames


def _header_rows(path: Path, rows: list[list[str]]) -> int:
    """Check the header rows; return how many there are (3 or 4)."""
    labels = [r[0].strip() if r else "" for r in rows[:4]]
    if not labels or labels[0] != "scorer":
        raise fail(
            path,
            f"not a DeepLabCut-style table: the first header row must start with 'scorer', got "
            f"{labels[0] if labels else 'an empty file'!r}",
        )
    expected = LEVELS_4 if len(labels) > 1 and labels[1] == "individuals" else LEVELS_3
    for i, want in enumerate(expected):
        got = labels[i] if i < len(labels) else "<end of file>"
        if got != want:
            raise fail(
                path,
                f"header row {i + 1} should start with {want!r}, got {got!r}: a DeepLabCut "
                f"table has the header rows {', '.join(LEVELS_4)} (individuals only in "
                "multi-animal files)",
            )
    widths = {len(rows[i]) for i in range(len(expected))}
    if len(widths) != 1:
        raise fail(path, f"header rows have different numbers of fields: {sorted(widths)}")
    return len(expected)


def parse_csv(path: str | Path) -> DlcTable:
    """Parse a DeepLabCut-style CSV file (also LightningPose's) into a :class:`DlcTable`."""
    path = Path(path)
    rows = csv_rows(path)
    n_header = _header_rows(path, rows)
    header = rows[:n_header]
    n_fields = len(header[0])
    n_index = 1
    while n_index < n_fields and header[0][n_index].strip() == "":
        n_index += 1
    keep, columns = [], []
    for j in range(n_index, n_fields):
        cells = [row[j].strip() for row in header]
        scorer, bodypart, coord = cells[0], cells[-2], cells[-1]
        individual = cells[1] if n_header == 4 else None
        if scorer == SPLIT_COLUMN and not bodypart and not coord:
            continue
        keep.append(j)
        columns.append((scorer, individual, bodypart, coord))
    data = rows[n_header:]
    values = numeric_rows(path, data, n_fields, keep, n_header + 1)
    index = ["/".join(row[:n_index]) for row in data]
    return DlcTable(columns=columns, values=values, frames=_int_frames(index))


def parse_h5(path: str | Path) -> DlcTable:
    """Read the pandas table of a DeepLabCut ``.h5`` file (needs PyTables)."""
    path = Path(path)
    import pandas as pd

    try:
        import tables  # noqa: F401
    except ImportError:
        raise missing_extra(path, "DeepLabCut .h5", "dlc", "tables") from None
    try:
        with pd.HDFStore(path, mode="r") as store:
            keys = [k.lstrip("/") for k in store]
            known = [k for k in H5_KEYS if k in keys]
            key = known[0] if known else (keys[0] if len(keys) == 1 else None)
            if key is None:
                raise fail(
                    path,
                    f"no {' or '.join(map(repr, H5_KEYS))} table in the file; its tables: {keys}",
                )
            df = store[key]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RuntimeError) as err:
        if str(err).startswith(str(path)):
            raise
        last = [line.strip() for line in str(err).splitlines() if line.strip()][-1:] or [""]
        raise fail(
            path, f"not a readable DeepLabCut .h5 table (truncated or corrupt?): {last[0]}"
        ) from None
    names = tuple(df.columns.names)
    if names not in (LEVELS_4, LEVELS_3):
        raise fail(
            path,
            f"table columns have levels {list(names)}; expected {list(LEVELS_4)} "
            "(individuals only in multi-animal files)",
        )
    columns = [
        (str(c[0]), str(c[1]) if len(c) == 4 else None, str(c[-2]), str(c[-1])) for c in df.columns
    ]
    keep = [j for j, c in enumerate(columns) if not (c[0] == SPLIT_COLUMN and not c[2])]
    try:
        values = df.iloc[:, keep].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise fail(path, f"table holds non-numeric values ({err})") from None
    if values.shape[0] == 0:
        raise fail(path, "the table has no rows")
    return DlcTable(
        columns=[columns[j] for j in keep], values=values, frames=_int_frames(list(df.index))
    )


def table_arrays(path: str | Path, table: DlcTable):
    """Turn a :class:`DlcTable` into arrays.

    Returns
    -------
    position : ndarray, shape (n_frames, n_space, n_keypoints, n_individuals)
    confidence : ndarray, shape (n_frames, n_keypoints, n_individuals), or None
    keypoints, individuals : list of str (individuals None for single-animal files)
    space : tuple of str
    scorers : list of str
    """
    groups: dict[tuple[str | None, str], dict[str, int]] = {}
    for j, (_, individual, bodypart, coord) in enumerate(table.columns):
        if coord not in COORDS:
            raise fail(
                path,
                f"column {j + 2} ({individual or ''} {bodypart}): unknown coord {coord!r}; "
                f"valid coords: {', '.join(COORDS)}",
            )
        group = groups.setdefault((individual, bodypart), {})
        if coord in group:
            raise fail(path, f"bodypart {bodypart!r} has the coord {coord!r} twice")
        group[coord] = j
    space = ("x", "y", "z") if any("z" in g for g in groups.values()) else ("x", "y")
    with_conf = {("likelihood" in g) for g in groups.values()}
    if len(with_conf) > 1:
        raise fail(path, "some bodyparts have a likelihood column and others do not")
    for (individual, bodypart), group in groups.items():
        want = set(space) | ({"likelihood"} if True in with_conf else set())
        if set(group) != want:
            who = f"individual {individual!r}, " if individual is not None else ""
            raise fail(
                path,
                f"{who}bodypart {bodypart!r} has coords {sorted(group)}, expected "
                f"{sorted(want)} (wrong column count?)",
            )
    keypoints = list(dict.fromkeys(bp for _, bp in groups))
    individuals = list(dict.fromkeys(ind for ind, _ in groups))
    n_frames = table.values.shape[0]
    position = np.full((n_frames, len(space), len(keypoints), len(individuals)), np.nan)
    confidence = np.full((n_frames, len(keypoints), len(individuals)), np.nan)
    for (individual, bodypart), group in groups.items():
        k, i = keypoints.index(bodypart), individuals.index(individual)
        for s, axis in enumerate(space):
            position[:, s, k, i] = table.values[:, group[axis]]
        if "likelihood" in group:
            confidence[:, k, i] = table.values[:, group["likelihood"]]
    scorers = list(dict.fromkeys(c[0] for c in table.columns))
    names = None if individuals == [None] else [str(i) for i in individuals]
    return position, (confidence if True in with_conf else None), keypoints, names, space, scorers


def build_dataset(
    path: Path,
    table: DlcTable,
    *,
    software: str,
    fmt: str,
    fps: float | None,
) -> xr.Dataset:
    """Make the tracks dataset of a DeepLabCut-style table (shared with LightningPose)."""
    position, confidence, keypoints, individuals, space, scorers = table_arrays(path, table)
    rate = resolve_fps(path, software, None, fps)
    is_2d = len(space) == 2
    return make_tracks_dataset(
        position,
        confidence,
        keypoints=keypoints,
        individuals=individuals,
        fps=rate,
        time=frame_time(path, table.frames, position.shape[0], rate),
        space=space,
        source_software=software,
        source_file=path,
        unit="px" if is_2d else UNKNOWN,
        up_axis="-y" if is_2d else None,
        extra_attrs={"scorer": ", ".join(scorers), "source_format": fmt},
    )


def csv_header_cells(path: str | Path) -> list[list[str]] | None:
    """Return the first four rows of a CSV file whose first cell is ``scorer``, else None."""
    text = head_text(path)
    if not text.lstrip().startswith("scorer"):
        return None
    rows = list(csv.reader(io.StringIO(text)))[:4]
    return rows if len(rows) >= 3 else None


def looks_like_lightning_pose(rows: list[list[str]]) -> bool:
    """LightningPose writes the scorer ``<model_type>_tracker`` and may add a ``set`` column."""
    scorers = {c.strip() for c in rows[0][1:] if c.strip()}
    return bool(scorers) and (
        all(s.endswith("_tracker") or s == SPLIT_COLUMN for s in scorers) or SPLIT_COLUMN in scorers
    )


def _is_pandas_table(handle, key: str) -> bool:
    """A pandas HDFStore group (not a plain dataset such as SLEAP's ``tracks``)."""
    group = handle.get(key)
    return group is not None and "pandas_type" in getattr(group, "attrs", {})


def sniff(path: str | Path) -> bool:
    """Return True for a DeepLabCut CSV (not LightningPose's) or ``.h5`` table.

    The ``.h5`` table is pandas' ``df_with_missing`` (pose files) or ``tracks``
    (multi-animal tracklet files, ``*_el.h5``).
    """
    path = Path(path)
    if is_hdf5(path):
        import h5py

        try:
            with h5py.File(path, "r") as handle:
                return any(_is_pandas_table(handle, key) for key in H5_KEYS)
        except (OSError, KeyError):
            return False
    rows = csv_header_cells(path)
    return rows is not None and not looks_like_lightning_pose(rows)


def read(path: str | Path, *, fps: float | None = None) -> xr.Dataset:
    """Read a DeepLabCut ``.csv`` or ``.h5`` pose file.

    Parameters
    ----------
    path : str or Path
        The file; ``.h5``/``.hdf5`` is read as the pandas table (``df_with_missing``, or
        ``tracks`` in tracklet files), anything else as CSV.
    fps : float
        Frames per second (DeepLabCut files do not record it): required.

    Returns
    -------
    xarray.Dataset
        ``position (time, space, keypoint, individual)`` in the file's unit (``"px"`` for
        2D, ``"unknown"`` for 3D; up axis ``"-y"`` for 2D, None for 3D) and
        ``confidence`` = likelihood (NaN for 3D files); ``time`` in seconds from the
        index column's frame numbers (row order when the index is not frame numbers).

    Raises
    ------
    TracksError
        Missing or misordered header rows, wrong column count, unknown coords,
        non-numeric cells, no ``fps``.
    """
    path = Path(path)
    table = parse_h5(path) if is_hdf5(path) else parse_csv(path)
    return build_dataset(path, table, software=SOFTWARE, fmt=FORMAT, fps=fps)
