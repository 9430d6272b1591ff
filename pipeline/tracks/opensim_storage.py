"""OpenSim storage files (``.mot``, ``.sto``): coordinate values over time.

Not keypoint tracks: a storage file holds one column per coordinate (joint angles,
translations, or any other signal), as OpenSim's inverse kinematics writes them and as
its coordinate tasks read them. :func:`read_storage` returns::

    value   (time, coordinate)  float64, in the file's units (NaN where a cell says nan)
    coords  time (seconds, the file's time column), coordinate (the column labels)
    attrs   in_degrees        True when rotations are in degrees
            in_degrees_stated whether the file says so (an ``inDegrees`` line)
            name, version, source_file, source_format ("mot" / "sto"), header (dict),
            renamed_columns (new label -> label: OpenSim allows a label twice, e.g. two
            force plates' ``ground_force_px``; the later columns get ``_2``, ``_3``...)

Two header dialects, both ended by ``endheader``:

- version 1 (OpenSim 2.0 and later): ``name`` line, then ``version=1``, ``nRows=N``,
  ``nColumns=M`` (time included), ``inDegrees=yes|no``, free text;
- the older SIMM header (no ``version`` line): ``nRows``/``nColumns`` or ``datarows``/
  ``datacolumns``, ``range``, ``name``, no ``inDegrees``: rotations are in degrees, as
  OpenSim assumes for such files.

A version-1 file without ``inDegrees`` is read as OpenSim's ``Storage`` reads it (radians),
with a warning. Which coordinates are rotational and which translational is not in the
file: the body plan says (translations are in metres either way).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.errors import TracksError

__all__ = ["STORAGE_SUFFIXES", "read_storage"]

STORAGE_SUFFIXES: tuple[str, ...] = (".mot", ".sto")
_KEY_VALUE = re.compile(r"^\s*([A-Za-z_][\w]*)\s*=\s*(.*?)\s*$")
_SIMM_FIELD = re.compile(r"^\s*(datarows|datacolumns|range|name|otherdata)\b\s*(.*?)\s*$")


def _fail(path: Path, what: str) -> TracksError:
    return TracksError(f"{path}: {what}")


def _header(path: Path, lines: list[str]) -> tuple[dict[str, str], int]:
    """The header fields (keys as written) and the index of the ``endheader`` line."""
    fields: dict[str, str] = {}
    for i, line in enumerate(lines):
        text = line.strip()
        if text.lower() == "endheader":
            return fields, i
        if i == 0 and "=" not in text:
            fields["name"] = text
            continue
        match = _KEY_VALUE.match(text) or _SIMM_FIELD.match(text)
        if match:
            fields.setdefault(match.group(1), match.group(2))
    raise _fail(
        path,
        "no 'endheader' line: an OpenSim storage header (name, version=1, nRows=, nColumns=, "
        "inDegrees=) must end with 'endheader'",
    )


def _count(path: Path, fields: dict[str, str], names: tuple[str, str]) -> int:
    for key in names:
        if key in fields:
            try:
                return int(fields[key])
            except ValueError:
                raise _fail(
                    path, f"header field {key!r}: {fields[key]!r} is not a whole number"
                ) from None
    raise _fail(
        path,
        f"header has no {names[0]!r} field (nor the old header's {names[1]!r}); header fields: "
        f"{sorted(fields)}",
    )


def _in_degrees(path: Path, fields: dict[str, str]) -> tuple[bool, bool]:
    """(in_degrees, stated): from ``inDegrees``, else by the header's dialect."""
    if "inDegrees" in fields:
        text = fields["inDegrees"].strip().lower()
        if text not in ("yes", "no"):
            raise _fail(path, f"header field 'inDegrees': {fields['inDegrees']!r}; valid: yes, no")
        return text == "yes", True
    if "version" not in fields:
        return True, False  # the old SIMM header: degrees, as OpenSim assumes
    warnings.warn(
        f"{path}: the header has version={fields['version']} but no 'inDegrees' line; "
        "reading rotations as radians, as OpenSim does",
        UserWarning,
        stacklevel=3,
    )
    return False, False


def read_storage(path: str | Path) -> xr.Dataset:
    """Read an OpenSim ``.mot`` / ``.sto`` file (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The storage file.

    Returns
    -------
    xarray.Dataset
        ``value (time, coordinate)`` float64 and the attrs of the module docstring.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    TracksError
        No ``endheader``; no ``nRows``/``nColumns`` (nor ``datarows``/``datacolumns``);
        a first column that is not ``time``; a column count or row count that disagrees
        with the header; a cell that is not a number; times not increasing. The message
        names the file, the line and the field.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such storage file")
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as err:
        raise _fail(path, f"cannot read the file ({err})") from None
    fields, end = _header(path, lines)
    n_rows = _count(path, fields, ("nRows", "datarows"))
    n_columns = _count(path, fields, ("nColumns", "datacolumns"))
    in_degrees, stated = _in_degrees(path, fields)
    body = [(i + 1, line) for i, line in enumerate(lines) if i > end and line.strip()]
    if not body:
        raise _fail(path, "no column labels after 'endheader'")
    label_line, label_text = body[0]
    labels = [
        c.strip() for c in (label_text.split("\t") if "\t" in label_text else label_text.split())
    ]
    labels = [c for c in labels if c]
    if len(labels) != n_columns:
        raise _fail(
            path,
            f"line {label_line}: {len(labels)} column labels, header field nColumns says "
            f"{n_columns} (time included)",
        )
    if labels[0].lower() != "time":
        raise _fail(path, f"line {label_line}: the first column is {labels[0]!r}, expected 'time'")
    labels, renamed = _unique(labels)
    rows = body[1:]
    if len(rows) != n_rows:
        raise _fail(
            path,
            f"header field nRows says {n_rows} rows, the file has {len(rows)} (truncated file?)",
        )
    values = np.empty((len(rows), n_columns))
    for r, (number, text) in enumerate(rows):
        cells = text.split()
        if len(cells) != n_columns:
            raise _fail(
                path,
                f"line {number} has {len(cells)} columns, header field nColumns says {n_columns}",
            )
        try:
            values[r] = [float(c) for c in cells]
        except ValueError:
            bad = next(c for c in cells if not _is_number(c))
            raise _fail(path, f"line {number}: {bad!r} is not a number") from None
    time = values[:, 0]
    if not np.isfinite(time).all() or np.any(np.diff(time) <= 0):
        raise _fail(path, "the time column is not finite and strictly increasing")
    header = {k: v for k, v in fields.items() if k != "name"}
    return xr.Dataset(
        {"value": (("time", "coordinate"), values[:, 1:])},
        coords={"time": time, "coordinate": np.array(labels[1:], dtype=object)},
        attrs={
            "in_degrees": in_degrees,
            "in_degrees_stated": stated,
            "name": fields.get("name", ""),
            "version": fields.get("version"),
            "source_file": str(path),
            "source_format": path.suffix.lower().lstrip(".") or "sto",
            "header": header,
            "renamed_columns": renamed,
        },
    )


def _unique(labels: list[str]) -> tuple[list[str], dict[str, str]]:
    """Labels made unique: a repeated label's later columns get ``_2``, ``_3``, ..."""
    out: list[str] = []
    renamed: dict[str, str] = {}
    for label in labels:
        name, k = label, 1
        while name in out or (name != label and name in labels):
            k += 1
            name = f"{label}_{k}"
        if name != label:
            renamed[name] = label
        out.append(name)
    return out, renamed


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
