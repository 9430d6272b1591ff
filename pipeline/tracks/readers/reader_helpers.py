"""Small helpers shared by the format readers: errors, fps, CSV cells, HDF5 names.

Every reader reports a bad file with ONE :class:`~pipeline.tracks.schema.TracksError`
whose message starts with the file's path and says what is wrong, so that an ingest of a
whole archive names the culprit. Readers never write anything.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import flag
from pipeline.tracks.schema import TracksError

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def fail(path: str | Path, what: str) -> TracksError:
    """Return the error for a malformed file: ``"<path>: <what>"``."""
    return TracksError(f"{path}: {what}")


def resolve_fps(path: str | Path, fmt: str, file_fps: float | None, fps: float | None) -> float:
    """Return the frame rate: the file's when it records one, else the ``fps`` option.

    Raises
    ------
    TracksError
        Neither gives a positive finite frame rate (never a silent 1.0).
    """
    value = file_fps if file_fps is not None else fps
    if value is None:
        raise fail(
            path,
            f"the frame rate is unknown: {fmt} files do not record it; pass {flag('fps')} "
            "(or fps in the run config's archive section)",
        )
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise fail(path, f"fps must be a positive number, got {value!r}") from None
    if not math.isfinite(value) or value <= 0:
        source = "the file records" if file_fps is not None else "got"
        raise fail(path, f"fps must be a positive number, {source} {value!r}")
    return value


def frame_time(path: str | Path, frames: np.ndarray | None, n: int, fps: float) -> np.ndarray:
    """Return time stamps in seconds from the file's frame numbers (or row order)."""
    if frames is None:
        return np.arange(n, dtype=np.float64) / fps
    frames = np.asarray(frames, dtype=np.float64)
    steps = np.diff(frames)
    if np.any(steps <= 0):
        first = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise fail(path, f"frame numbers are not strictly increasing (row {first})")
    return frames / fps


def is_hdf5(path: str | Path) -> bool:
    """Return True if the file starts with the HDF5 signature."""
    try:
        with open(path, "rb") as handle:
            return handle.read(8) == HDF5_SIGNATURE
    except OSError:
        return False


def damage(path: str | Path) -> str | None:
    """Why a file that no reader could read looks damaged, or None when it does not.

    An HDF5 file (by its signature) that h5py cannot open or walk is truncated or
    damaged; a ``.json`` file that does not parse is not JSON; a ``.csv``/``.tsv`` file
    whose rows are not as wide as its first line is cut short (``header says 12 columns,
    row 5 has 8``). Asked only after reading failed, so a ragged file a reader accepts
    is never refused here.
    """
    path = Path(path)
    if not path.is_file():
        return None
    if is_hdf5(path):
        return _hdf5_damage(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        import json

        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            return f"not JSON (truncated?): {exc}"
        return None
    if suffix in (".csv", ".tsv"):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        rows = list(csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ","))
        rows = [r for r in rows if r]
        for number, row in enumerate(rows[1:], start=2):
            if len(row) != len(rows[0]):
                return f"header says {len(rows[0])} columns, row {number} has {len(row)}" + (
                    " (the file is cut short?)" if number == len(rows) else ""
                )
    return None


def _hdf5_damage(path: Path) -> str | None:
    try:
        import h5py
    except ImportError:
        return None
    try:
        with h5py.File(path, "r") as handle:
            handle.visititems(lambda name, obj: obj[()] if isinstance(obj, h5py.Dataset) else None)
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, RuntimeError...
        return f"truncated or damaged HDF5 file ({type(exc).__name__}: {exc})"
    return None


def head_text(path: str | Path, n_bytes: int = 65536) -> str:
    """Return the first ``n_bytes`` of a text file (empty when unreadable)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(n_bytes).decode("utf-8", errors="replace")
    except OSError:
        return ""


def decode_names(values: Iterable[Any]) -> list[str]:
    """Decode HDF5 names that come as bytes or str."""
    return [v.decode() if isinstance(v, bytes | np.bytes_) else str(v) for v in values]


def missing_extra(path: str | Path, fmt: str, extra: str, module: str) -> TracksError:
    """Return the error for a reader whose optional dependency is not installed."""
    return fail(
        path,
        f"reading {fmt} files needs the optional package {module!r}: "
        f"pip install 'kinefit[{extra}]'",
    )


def csv_rows(path: str | Path) -> list[list[str]]:
    """Return the rows of a UTF-8 CSV file, without trailing blank rows."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise fail(path, f"cannot read the file as UTF-8 text ({err})") from None
    rows = list(csv.reader(io.StringIO(text)))
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    return rows


def numeric_rows(
    path: str | Path, data: list[list[str]], n_fields: int, keep: Sequence[int], first_line: int
) -> np.ndarray:
    """Convert CSV data rows to floats (empty cell = NaN), checking every row's length.

    Parameters
    ----------
    data : list of rows
        The data rows; ``first_line`` is the file line number of ``data[0]``.
    n_fields : int
        Fields every row must have (the header's).
    keep : sequence of int
        Columns to convert.

    Returns
    -------
    ndarray, shape (len(data), len(keep)), float64
    """
    if not data:
        raise fail(path, "no data rows after the header")
    for i, row in enumerate(data):
        if len(row) != n_fields:
            raise fail(
                path,
                f"line {first_line + i} has {len(row)} fields, the header has {n_fields} "
                "(truncated or malformed file)",
            )
    # "nan" goes in before the array is made: a str array is as wide as its longest cell,
    # so writing "nan" into one whose cells are all shorter would truncate it to "na"
    cells = np.array([[row[j].strip() or "nan" for j in keep] for row in data], dtype=str)
    try:
        return cells.astype(np.float64)
    except ValueError:
        for i, j in np.ndindex(cells.shape):
            try:
                float(cells[i, j])
            except ValueError:
                raise fail(
                    path,
                    f"line {first_line + i}, column {keep[j] + 1}: "
                    f"{str(cells[i, j])!r} is not a number",
                ) from None
        raise
