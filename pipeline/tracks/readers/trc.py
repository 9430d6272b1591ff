"""OpenSim ``.trc`` marker files (also as Pose2Sim, Vicon and Motive write them).

Layout (tab-separated)::

    PathFileType  4  (X/Y/Z)  walk.trc
    DataRate  CameraRate  NumFrames  NumMarkers  Units  OrigDataRate  OrigDataStartFrame  ...
    60.00     60.00       151        41          mm     60.00         1                   ...
    Frame#  Time  R.ASIS  <empty>  <empty>  L.ASIS  ...
                  X1      Y1       Z1       X2      ...
    <optional blank line>
    1       0.000 617.2   1055.3   170.8    639.6   ...

What is read:

- markers: the names of line 4 (one per three columns) as keypoints, one individual;
  ``NumMarkers`` must agree with them and line 5 must hold three labels per marker.
- values: every data row has ``2 + 3 * NumMarkers`` cells (trailing empty cells, which
  some writers add, are dropped); an empty cell is a missing value (NaN).
- time: the file's ``Time`` column, as it is (a trial may start at 0.5 s); the first
  ``Frame#`` is kept as ``attrs["first_frame"]``.
- rate: ``DataRate`` (the header's ``CameraRate``, ``OrigDataRate``... go to attrs).
- unit: ``Units`` (``mm``, ``m``, ...), required.
- up axis: not recorded by the format; ``"y"``, the convention of OpenSim (whose marker
  file this is) and of Pose2Sim, which write it in the model's Y-up frame. A ``.trc``
  exported from a Z-up lab needs ``up_axis=z``.
- confidence: none in the format: NaN.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers.reader_helpers import fail, head_text, resolve_fps
from pipeline.tracks.schema import make_tracks_dataset
from pipeline.tracks.units import LENGTH_UNITS, UNKNOWN, canonical_unit

FORMAT = "trc"
SUFFIXES: tuple[str, ...] = (".trc",)
SOFTWARE = "TRC"
#: Header fields a ``.trc`` must have.
REQUIRED_FIELDS: tuple[str, ...] = ("DataRate", "NumMarkers", "Units")
#: Header fields kept in attrs (as ``trc_<name>``) when present.
KEPT_FIELDS: tuple[str, ...] = (
    "CameraRate",
    "NumFrames",
    "OrigDataRate",
    "OrigDataStartFrame",
    "OrigNumFrames",
)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.rstrip("\r\n").split("\t")]


def _number(path: Path, field: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise fail(path, f"header field {field!r}: {text!r} is not a number") from None


def parse_header(path: str | Path, lines: list[str]) -> dict:
    """Read the five header lines of a ``.trc``.

    Returns
    -------
    dict
        ``fields`` (header name -> value text), ``markers`` (names), ``rate`` (float),
        ``unit`` (canonical), ``n_frames`` (int or None).

    Raises
    ------
    TracksError
        Fewer than five header lines, a first line that is not ``PathFileType``, a missing
        or non-numeric required field, an unknown unit, marker names that disagree with
        ``NumMarkers`` or with the coordinate labels, or duplicated marker names.
    """
    path = Path(path)
    if len(lines) < 5:
        raise fail(path, f"truncated .trc header: {len(lines)} lines, expected 5")
    if not lines[0].startswith("PathFileType"):
        raise fail(path, f"line 1: expected 'PathFileType ...', got {lines[0][:40]!r}")
    names = [c for c in _cells(lines[1]) if c]
    values = _cells(lines[2])
    fields = dict(zip(names, values, strict=False))
    missing = [f for f in REQUIRED_FIELDS if not fields.get(f)]
    if missing:
        raise fail(
            path,
            f"header (lines 2-3) has no {', '.join(missing)} field(s); it names "
            f"{names}; a .trc header needs {', '.join(REQUIRED_FIELDS)}",
        )
    rate = _number(path, "DataRate", fields["DataRate"])
    n_markers = _number(path, "NumMarkers", fields["NumMarkers"])
    unit = canonical_unit(fields["Units"])
    if unit not in LENGTH_UNITS or unit in ("px", UNKNOWN):
        raise fail(
            path,
            f"header field 'Units': {fields['Units']!r} is not a length unit; valid: "
            f"{', '.join(u for u in LENGTH_UNITS if u not in ('px', UNKNOWN))}",
        )
    head = _cells(lines[3])
    if len(head) < 2 or head[0].lower() not in ("frame#", "frame") or head[1].lower() != "time":
        raise fail(path, f"line 4: expected 'Frame#<tab>Time<tab>markers...', got {head[:3]}")
    markers = [c for c in head[2:] if c]
    if len(markers) != int(n_markers):
        raise fail(
            path,
            f"header field 'NumMarkers' is {int(n_markers)} but line 4 names {len(markers)} "
            "markers",
        )
    dupes = sorted({m for m in markers if markers.count(m) > 1})
    if dupes:
        raise fail(path, f"line 4: duplicated marker names {dupes}")
    labels = [c for c in _cells(lines[4]) if c]
    if len(labels) != 3 * len(markers):
        raise fail(
            path,
            f"line 5: {len(labels)} coordinate labels (X1 Y1 Z1 ...) for {len(markers)} "
            f"markers; expected {3 * len(markers)}",
        )
    n_frames = fields.get("NumFrames")
    return {
        "fields": fields,
        "markers": markers,
        "rate": rate,
        "unit": unit,
        "n_frames": int(_number(path, "NumFrames", n_frames)) if n_frames else None,
    }


def _rows(path: Path, lines: list[str], n_fields: int) -> tuple[np.ndarray, list[int]]:
    """The data rows as floats ``(n_rows, n_fields)`` and their 1-based line numbers."""
    rows, numbers = [], []
    for number, line in enumerate(lines[5:], start=6):
        if not line.strip():
            continue
        cells = _cells(line)
        while len(cells) > n_fields and not cells[-1]:
            cells.pop()
        if len(cells) != n_fields:
            raise fail(
                path,
                f"line {number} (frame {cells[0] or '?'}) has {len(cells)} columns, the header "
                f"says {n_fields} (Frame#, Time and 3 per marker); truncated or malformed file",
            )
        rows.append(cells)
        numbers.append(number)
    if not rows:
        raise fail(path, "no data rows after the header")
    cells = np.array([[c or "nan" for c in row] for row in rows], dtype=str)
    try:
        return cells.astype(np.float64), numbers
    except ValueError:
        for i, j in np.ndindex(cells.shape):
            try:
                float(cells[i, j])
            except ValueError:
                raise fail(
                    path, f"line {numbers[i]}, column {j + 1}: {str(cells[i, j])!r} is not a number"
                ) from None
        raise


def parse(path: str | Path) -> dict:
    """Read a ``.trc`` into arrays.

    Returns
    -------
    dict
        ``position (n_frames, 3, n_markers)`` in ``unit``, ``time (n_frames,)`` seconds,
        ``frame (n_frames,)`` the file's frame numbers, and the header's ``markers``,
        ``rate``, ``unit``, ``fields``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise fail(path, f"cannot read the file ({err})") from None
    lines = text.splitlines()
    header = parse_header(path, lines)
    n = len(header["markers"])
    data, numbers = _rows(path, lines, 2 + 3 * n)
    if header["n_frames"] is not None and header["n_frames"] != len(data):
        raise fail(
            path,
            f"header field 'NumFrames' is {header['n_frames']} but the file has {len(data)} "
            "data rows (truncated file?)",
        )
    frame, time = data[:, 0], data[:, 1]
    for name, column in (("Frame#", frame), ("Time", time)):
        if np.isnan(column).any():
            line = numbers[int(np.flatnonzero(np.isnan(column))[0])]
            raise fail(path, f"line {line}: the {name} column is empty")
    steps = np.diff(time)
    if np.any(steps <= 0):
        line = numbers[int(np.flatnonzero(steps <= 0)[0]) + 1]
        raise fail(path, f"line {line}: the Time column is not strictly increasing")
    position = data[:, 2:].reshape(len(data), n, 3).transpose(0, 2, 1)
    return {**header, "position": position, "time": time, "frame": frame}


def sniff(path: str | Path) -> bool:
    """Return True when the file starts with ``PathFileType`` and has a ``DataRate`` line."""
    path = Path(path)
    if not path.is_file():
        return False
    lines = head_text(path, 4096).splitlines()
    return len(lines) >= 2 and lines[0].startswith("PathFileType") and "DataRate" in lines[1]


#: Up axis of every ``.trc`` (OpenSim's convention; the ``up_axis`` option overrides it).
UP_AXIS = "y"


def read(path: str | Path, *, fps: float | None = None) -> xr.Dataset:
    """Read the markers of a ``.trc`` file (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The ``.trc`` file.
    fps : float, optional
        Not used when the file has its ``DataRate`` (it always must).

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y, z], keypoint, individual)`` in the file's
        ``Units``, ``time`` the file's times in seconds, confidence NaN, one individual.

    Raises
    ------
    TracksError
        Header or row problems (see :func:`parse_header`), naming the line and field.
    """
    path = Path(path)
    arrays = parse(path)
    rate = resolve_fps(path, SOFTWARE, arrays["rate"], fps)
    fields = arrays["fields"]
    extra = {f"trc_{k}": fields[k] for k in KEPT_FIELDS if fields.get(k)}
    return make_tracks_dataset(
        arrays["position"],
        None,
        keypoints=arrays["markers"],
        fps=rate,
        time=arrays["time"],
        space=("x", "y", "z"),
        source_software=SOFTWARE,
        source_file=path,
        unit=arrays["unit"],
        up_axis=UP_AXIS,
        extra_attrs={
            "source_format": FORMAT,
            "first_frame": int(arrays["frame"][0]),
            **extra,
        },
    )
