"""The tracks dataset: movement's poses schema, built and checked in one place.

Contract::

    position    (time, space, keypoint, individual)  float32, NaN = missing
    confidence  (time, keypoint, individual)         float32, NaN = unknown
    coords      time (seconds when fps is known, else frame numbers), space ["x","y","z"]
                or ["x","y"], keypoint and individual (object-dtype strings)
    attrs       source_software, ds_type="poses", fps, time_unit, source_file, and
                kinefit's own: session, unit (length unit), up_axis, source_sha256

:func:`make_tracks_dataset` builds such a dataset from arrays; :func:`validate_tracks`
checks any dataset against it and reports every problem at once in one
:class:`TracksError`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pipeline.errors import ConfigError, TracksError
from pipeline.provenance.hashing import tree_sha256

DIMS: tuple[str, str, str, str] = ("time", "space", "keypoint", "individual")
CONFIDENCE_DIMS: tuple[str, str, str] = ("time", "keypoint", "individual")
SPACE_NAMES: dict[int, tuple[str, ...]] = {2: ("x", "y"), 3: ("x", "y", "z")}
#: movement's older plural dim names, renamed on validation.
PLURAL_DIMS: dict[str, str] = {"keypoints": "keypoint", "individuals": "individual"}
UP_AXES: tuple[str, ...] = ("x", "y", "z", "-x", "-y", "-z")


def check_up_axis(up: str | None, where: str) -> str | None:
    """``up`` spelled one way (``"+Z"`` -> ``"z"``); None stays None.

    Raises
    ------
    ConfigError
        ``up`` is not one of :data:`UP_AXES` (the message names ``where``).
    """
    if up is None:
        return None
    text = str(up).strip().lower().removeprefix("+")
    if text not in UP_AXES:
        raise ConfigError(f"{where}: up axis {up!r} is not one of {', '.join(UP_AXES)}")
    return text


def _names(values: Sequence[str] | None, n: int, prefix: str) -> np.ndarray:
    names = [f"{prefix}_{i}" for i in range(n)] if values is None else [str(v) for v in values]
    return np.array(names, dtype=object)


def make_tracks_dataset(
    position: np.ndarray,
    confidence: np.ndarray | None = None,
    *,
    keypoints: Sequence[str],
    individuals: Sequence[str] | None = None,
    fps: float | None = None,
    time: np.ndarray | None = None,
    space: Sequence[str] = ("x", "y", "z"),
    source_software: str,
    source_file: str | Path | None = None,
    unit: str | None = None,
    up_axis: str | None = None,
    session: str | None = None,
    extra_attrs: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Build a validated tracks dataset in movement's poses schema.

    Parameters
    ----------
    position : ndarray, shape (n_frames, n_space, n_keypoints, n_individuals)
        Keypoint positions (length ``unit``); NaN = missing. A 3-D array
        ``(n_frames, n_space, n_keypoints)`` is one individual.
    confidence : ndarray, shape (n_frames, n_keypoints, n_individuals), optional
        Tracking confidence (typically 0-1); NaN = unknown. Default all NaN.
    keypoints : sequence of str
        ``n_keypoints`` unique names.
    individuals : sequence of str, optional
        ``n_individuals`` unique names; default ``individual_0``, ...
    fps : float, optional
        Frames per second. With it, ``time`` is seconds ``frame / fps``.
    time : ndarray, shape (n_frames,), optional
        Explicit time stamps in seconds (strictly increasing); overrides ``frame / fps``.
        Without ``fps`` and ``time`` the time coordinate counts frames.
    space : sequence of str
        ``("x", "y", "z")`` or ``("x", "y")``.
    source_software : str
        Program that produced the tracks (``"DeepLabCut"``, ``"kinefit.synth"``, ...).
    source_file : str or Path, optional
        File the tracks were read from; its sha256 goes to ``source_sha256``.
    unit : str, optional
        Length unit of ``position`` (``"mm"``, ``"m"``, ``"px"``, ``"unknown"``; see
        :mod:`pipeline.tracks.units`).
    up_axis : str, optional
        World up axis, one of ``x, y, z, -x, -y, -z``.
    session : str, optional
        Session name.
    extra_attrs : mapping, optional
        Further attrs (JSON-serializable values).

    Returns
    -------
    xarray.Dataset
        Validated by :func:`validate_tracks`.

    Raises
    ------
    TracksError
        Malformed arrays or names, or an infinite position or confidence (missing
        values are NaN).
    """
    position = np.asarray(position, dtype=np.float32)
    if position.ndim == 3:
        position = position[..., np.newaxis]
    if position.ndim != 4:
        raise TracksError(
            f"position: expected shape (time, space, keypoint, individual), got {position.shape}"
        )
    n_frames, _, n_keypoints, n_individuals = position.shape
    if confidence is None:
        confidence = np.full((n_frames, n_keypoints, n_individuals), np.nan, dtype=np.float32)
    confidence = np.asarray(confidence, dtype=np.float32)
    if confidence.ndim == 2:
        confidence = confidence[..., np.newaxis]
    where = str(source_file) if source_file else "<in-memory>"
    for name, values in (("position", position), ("confidence", confidence)):
        if np.isinf(values).any():
            frame = int(np.argwhere(np.isinf(values))[0][0])
            raise TracksError(
                f"{where}: field {name!r}: {int(np.isinf(values).sum())} infinite value(s) "
                f"(first at frame {frame}); missing values are NaN, never infinite"
            )
    if time is not None:
        time_coord, time_unit = np.asarray(time, dtype=np.float64), "seconds"
    elif fps is not None:
        time_coord, time_unit = np.arange(n_frames) / float(fps), "seconds"
    else:
        time_coord, time_unit = np.arange(n_frames, dtype=np.float64), "frames"
    attrs: dict[str, Any] = {
        "source_software": source_software,
        "ds_type": "poses",
        "fps": None if fps is None else float(fps),
        "time_unit": time_unit,
        "source_file": None if source_file is None else str(source_file),
        "session": session,
        "unit": unit,
        "up_axis": up_axis,
        "source_sha256": None,
    }
    if source_file is not None and Path(source_file).exists():
        attrs["source_sha256"] = tree_sha256(source_file)
    attrs.update(extra_attrs or {})
    ds = xr.Dataset(
        {"position": (DIMS, position), "confidence": (CONFIDENCE_DIMS, confidence)},
        coords={
            "time": time_coord,
            "space": np.array(list(space), dtype=object),
            "keypoint": _names(keypoints, n_keypoints, "keypoint"),
            "individual": _names(individuals, n_individuals, "individual"),
        },
        attrs=attrs,
    )
    return validate_tracks(ds, source=where)


def _check_names(ds: xr.Dataset, dim: str, problems: list[str]) -> None:
    if dim not in ds.coords:
        problems.append(f"coordinate {dim!r} is missing (names are required)")
        return
    values = [str(v) for v in np.asarray(ds[dim].values).tolist()]
    seen, dupes = set(), []
    for v in values:
        if v in seen and v not in dupes:
            dupes.append(v)
        seen.add(v)
    if dupes:
        problems.append(f"{dim}: duplicated names {dupes}")


def _check_time(ds: xr.Dataset, problems: list[str]) -> None:
    if "time" not in ds.coords:
        problems.append("coordinate 'time' is missing")
        return
    t = np.asarray(ds["time"].values)
    if not np.issubdtype(t.dtype, np.number) or np.issubdtype(t.dtype, np.complexfloating):
        problems.append(f"time: expected numbers (seconds or frames), got dtype {t.dtype}")
        return
    if t.size == 0:
        problems.append("time: the session has no frames")
        return
    if not np.all(np.isfinite(t)):
        problems.append("time: contains NaN or infinite values")
        return
    steps = np.diff(t)
    if np.any(steps == 0):
        first = int(np.flatnonzero(steps == 0)[0]) + 1
        problems.append(f"time: duplicated time stamps (first at index {first})")
    if np.any(steps < 0):
        problems.append(
            f"time: not monotonic increasing (first decrease at index "
            f"{int(np.flatnonzero(steps < 0)[0]) + 1})"
        )


def _check_var(ds: xr.Dataset, name: str, dims: tuple[str, ...], problems: list[str]) -> None:
    var = ds[name]
    if set(var.dims) != set(dims):
        problems.append(f"{name}: expected dims {dims}, got {var.dims}")
    elif not np.issubdtype(var.dtype, np.number) or np.issubdtype(var.dtype, np.complexfloating):
        problems.append(f"{name}: expected real numbers (float32), got dtype {var.dtype}")


def _check_attrs(attrs: Mapping[str, Any], problems: list[str]) -> None:
    ds_type = attrs.get("ds_type", "poses")
    if ds_type != "poses":
        problems.append(f"attrs.ds_type: expected 'poses', got {ds_type!r}")
    fps = attrs.get("fps")
    if fps is not None:
        try:
            ok = math.isfinite(float(fps)) and float(fps) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            problems.append(f"attrs.fps: expected a positive number, got {fps!r}")
    up = attrs.get("up_axis")
    if up is not None and up not in UP_AXES:
        problems.append(f"attrs.up_axis: expected one of {', '.join(UP_AXES)}, got {up!r}")


def validate_tracks(ds: xr.Dataset, source: str = "<in-memory>") -> xr.Dataset:
    """Check a tracks dataset against the contract; return it normalized.

    Normalization: plural dim names (``keypoints``, ``individuals``) are renamed,
    ``position`` and ``confidence`` are transposed to the contract's dim order and cast
    to float32, name coords become object-dtype strings, a missing ``confidence`` is
    filled with NaN (with a warning) and missing attrs get their defaults
    (``ds_type="poses"``; ``time_unit`` from the presence of ``fps``). Data stays lazy.

    Parameters
    ----------
    ds : xarray.Dataset
        Candidate tracks.
    source : str
        Where it came from (a path), named in the error message.

    Returns
    -------
    xarray.Dataset

    Raises
    ------
    TracksError
        Listing every problem found: missing dims or variables, wrong dims of a
        variable, wrong space size or names, non-monotonic or duplicated time, duplicated
        keypoint or individual names, non-numeric data, invalid attrs.
    """
    ds = ds.rename({k: v for k, v in PLURAL_DIMS.items() if k in ds.dims or k in ds.coords})
    problems: list[str] = []
    missing_dims = [d for d in DIMS if d not in ds.dims]
    if missing_dims:
        problems.append(f"missing dims {missing_dims} (expected {list(DIMS)}; got {list(ds.dims)})")
    if "position" not in ds.data_vars:
        problems.append(f"missing variable 'position'; variables: {list(ds.data_vars)}")
    else:
        _check_var(ds, "position", DIMS, problems)
    if "confidence" in ds.data_vars:
        _check_var(ds, "confidence", CONFIDENCE_DIMS, problems)
    if "space" in ds.dims:
        n_space = ds.sizes["space"]
        if n_space not in SPACE_NAMES:
            problems.append(f"space: expected 2 or 3 components (x, y[, z]), got {n_space}")
        elif "space" not in ds.coords:
            ds = ds.assign_coords(space=np.array(SPACE_NAMES[n_space], dtype=object))
        else:
            got = tuple(str(v) for v in np.asarray(ds["space"].values).tolist())
            if got != SPACE_NAMES[n_space]:
                problems.append(f"space: expected names {list(SPACE_NAMES[n_space])}, got {got}")
    if "time" in ds.dims:
        _check_time(ds, problems)
    for dim in ("keypoint", "individual"):
        if dim in ds.dims:
            _check_names(ds, dim, problems)
    _check_attrs(ds.attrs, problems)
    if problems:
        raise TracksError(
            f"{source}: not a valid tracks dataset (movement poses schema):\n  - "
            + "\n  - ".join(problems)
        )
    if "confidence" not in ds.data_vars:
        warnings.warn(f"{source}: no 'confidence' variable; filled with NaN", stacklevel=2)
        shape = tuple(ds.sizes[d] for d in CONFIDENCE_DIMS)
        ds = ds.assign(confidence=(CONFIDENCE_DIMS, np.full(shape, np.nan, np.float32)))
    ds = ds.assign(
        position=ds["position"].transpose(*DIMS).astype(np.float32),
        confidence=ds["confidence"].transpose(*CONFIDENCE_DIMS).astype(np.float32),
    )
    ds = ds.assign_coords(
        {
            d: np.array([str(v) for v in np.asarray(ds[d].values).tolist()], dtype=object)
            for d in ("space", "keypoint", "individual")
        }
    )
    attrs = dict(ds.attrs)
    attrs.setdefault("ds_type", "poses")
    attrs.setdefault("source_software", None)
    attrs.setdefault("fps", None)
    attrs.setdefault("time_unit", "seconds" if attrs["fps"] is not None else "frames")
    for key in ("source_file", "session", "unit", "up_axis", "source_sha256"):
        attrs.setdefault(key, None)
    if attrs["fps"] is not None:
        attrs["fps"] = float(attrs["fps"])
    ds.attrs = attrs
    return ds
