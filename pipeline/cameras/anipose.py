"""Anipose / aniposelib and Pose2Sim calibration files (TOML; the same layout in JSON).

The layout (aniposelib's ``CameraGroup.dump``; Pose2Sim's ``toml_write`` is the same with
tables named after the cameras and four distortion values)::

    [cam_0]                      # any table name; Pose2Sim uses the camera's name
    name = "top"
    size = [1280, 1024]          # [width, height] px
    matrix = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]
    distortions = [k1, k2, p1, p2, k3]   # radtan (4 or 5); fisheye: [k1, k2, k3, k4]
    rotation = [rx, ry, rz]      # world-to-camera Rodrigues vector (rad)
    translation = [tx, ty, tz]   # world-to-camera, in the calibration's length unit
    fisheye = false              # optional (aniposelib writes it only for fisheye cameras)

    [metadata]                   # optional; kinefit adds `unit` when it knows it
    adjusted = false
    error = 0.0

Every table but ``metadata`` is a camera, in file order. Neither tool records the length
unit of the extrinsics: it comes from the ``unit=`` argument, else ``metadata.unit`` (files
kinefit wrote), else it is ``"unknown"``. Field spellings follow
:mod:`pipeline.cameras.camera_fields`.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomli_w

from pipeline.cameras.camera import Camera, camera_error, check_unique_names, normalize_unit
from pipeline.cameras.camera_fields import camera_from_table

__all__ = [
    "FORMAT",
    "SUFFIXES",
    "cameras_from_tables",
    "read",
    "sniff",
    "read_toml",
    "tables_from_cameras",
    "write_json",
    "write_toml",
]

FORMAT = "anipose"
SUFFIXES = (".toml",)


def cameras_from_tables(
    doc: Mapping[str, Any], source: str, unit: str | None = None
) -> list[Camera]:
    """Cameras of a parsed Anipose/Pose2Sim document (tables keyed by any name).

    Parameters
    ----------
    doc : mapping
        The parsed file: camera tables plus an optional ``metadata`` table.
    source : str
        The file, for error messages.
    unit : str, optional
        Length unit of the extrinsics (see the module docstring).

    Returns
    -------
    list of Camera
    """
    meta = doc.get("metadata", {})
    meta_unit = meta.get("unit") if isinstance(meta, Mapping) else None
    if unit is not None and meta_unit is not None:
        given = normalize_unit(unit, source)
        if given != normalize_unit(meta_unit, source):
            raise camera_error(
                source,
                f"unit={unit!r} contradicts the file's metadata unit {meta_unit!r}",
                field="unit",
            )
    unit = unit if unit is not None else meta_unit
    cameras = []
    for key, table in doc.items():
        if key == "metadata":
            continue
        if not isinstance(table, Mapping):
            raise camera_error(
                source, f"expected a camera table, got {type(table).__name__}", field=key
            )
        cameras.append(camera_from_table(table, source, default_name=key, unit=unit))
    if not cameras:
        raise camera_error(source, "no camera tables (expected [cam_0], [cam_1], ...)")
    check_unique_names(cameras, source)
    return cameras


def read_toml(path: str | Path, unit: str | None = None) -> list[Camera]:
    """Read an Anipose ``calibration.toml`` or a Pose2Sim calibration TOML.

    Parameters
    ----------
    path : str or Path
    unit : str, optional
        Length unit of the extrinsics; ``"unknown"`` when neither given nor recorded.

    Returns
    -------
    list of Camera
        In file order.

    Raises
    ------
    CameraError
        A file that does not parse, or a camera with a missing or malformed field.
    """
    source = str(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise camera_error(source, f"not valid TOML: {exc}") from None
    return cameras_from_tables(doc, source, unit)


def tables_from_cameras(
    cameras: Sequence[Camera], metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Anipose document of ``cameras``: ``cam_<i>`` tables and ``metadata``.

    A camera without distortion is written as radtan with zero coefficients (aniposelib
    needs the field); it projects identically. The metadata gets ``unit`` when the
    cameras' unit is known (all cameras must share it).
    """
    check_unique_names(cameras, "<cameras>")
    units = {cam.unit for cam in cameras}
    if len(units) > 1:
        raise camera_error(
            "<cameras>", f"cameras have different units {sorted(units)}", field="unit"
        )
    doc: dict[str, Any] = {}
    for i, cam in enumerate(cameras):
        doc[f"cam_{i}"] = {
            "name": cam.name,
            "size": list(cam.size),
            "matrix": cam.matrix.tolist(),
            "distortions": list(cam.coefficients) if cam.coefficients else [0.0] * 5,
            "rotation": [float(v) for v in cam.rvec],
            "translation": list(cam.translation),
            "fisheye": cam.distortion == "fisheye",
        }
    meta = dict(metadata or {})
    unit = units.pop() if units else "unknown"
    if unit != "unknown":
        meta["unit"] = unit
    doc["metadata"] = meta
    return doc


def write_toml(
    path: str | Path, cameras: Sequence[Camera], metadata: Mapping[str, Any] | None = None
) -> Path:
    """Write an Anipose ``calibration.toml`` (aniposelib's ``CameraGroup.load`` reads it).

    Returns
    -------
    Path
        The written file.
    """
    path = Path(path)
    path.write_text(tomli_w.dumps(tables_from_cameras(cameras, metadata)))
    return path


def write_json(
    path: str | Path, cameras: Sequence[Camera], metadata: Mapping[str, Any] | None = None
) -> Path:
    """Write the Anipose layout as JSON (read back by :func:`pipeline.cameras.read_calibration`).

    Returns
    -------
    Path
        The written file.
    """
    path = Path(path)
    path.write_text(json.dumps(tables_from_cameras(cameras, metadata), indent=2) + "\n")
    return path


def sniff(path: str | Path) -> bool:
    """True when the file parses as TOML with at least one table (a camera or metadata)."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return any(isinstance(v, Mapping) for v in doc.values())


def read(path: str | Path, *, unit: str | None = None) -> list[Camera]:
    """The format contract's call: :func:`read_toml`."""
    return read_toml(path, unit)
