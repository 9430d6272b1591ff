"""OpenCV-style calibration files: ``cv2.FileStorage`` YAML/JSON and plain YAML/JSON.

Three layouts are recognised (field spellings in :mod:`pipeline.cameras.camera_fields`):

1. One camera at the top level (``cv2.FileStorage`` output of OpenCV's calibration
   sample, ROS ``camera_info``): ``camera_matrix``/``K``, ``distortion_coefficients``/``D``,
   ``R``/``rvec``, ``T``/``tvec``, ``image_width`` + ``image_height``. Its name is the
   ``name``/``camera_name`` key, else the file's stem.
2. A ``cameras`` key holding a list of camera tables (named by their ``name`` key, else
   ``cam_<i>``) or a mapping from camera name to table.
3. Camera tables at the top level keyed by name (the Anipose layout written as JSON by
   :func:`pipeline.cameras.anipose.write_json`); a ``metadata`` table is skipped.

``cv2.FileStorage`` YAML starts with ``%YAML:1.0`` and tags matrices ``!!opencv-matrix``
(``rows``, ``cols``, ``dt``, ``data``); both are understood without OpenCV installed. The
extrinsics' unit: the ``unit=`` argument, else a ``unit`` key (camera, top level or
``metadata``), else ``"unknown"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline.cameras.camera import Camera, camera_error, check_unique_names
from pipeline.cameras.camera_fields import KEYS, camera_from_table
from pipeline.errors import CameraError

__all__ = ["read_opencv"]

_CAMERA_KEYS = {k for f in ("matrix", "distortion", "rotation", "translation") for k in KEYS[f]}


class _OpenCVLoader(yaml.SafeLoader):
    """SafeLoader that also builds OpenCV's ``!!opencv-matrix`` nodes (as mappings)."""


def _opencv_matrix(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    return loader.construct_mapping(node, deep=True)


for _tag in ("tag:yaml.org,2002:opencv-matrix", "tag:yaml.org,2002:opencv-nd-matrix"):
    _OpenCVLoader.add_constructor(_tag, _opencv_matrix)


def _parse(path: Path) -> Any:
    text = path.read_text()
    source = str(path)
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise camera_error(source, f"not valid JSON: {exc}") from None
    if text.startswith("%YAML:"):  # cv2.FileStorage's directive is not YAML 1.1 syntax
        text = text.split("\n", 1)[1] if "\n" in text else ""
    try:
        return yaml.load(text, Loader=_OpenCVLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        raise camera_error(source, f"not valid YAML: {exc}") from None


def _is_camera_table(value: Any) -> bool:
    return isinstance(value, Mapping) and any(k in value for k in _CAMERA_KEYS)


def _file_unit(doc: Mapping[str, Any]) -> Any:
    meta = doc.get("metadata")
    if isinstance(meta, Mapping) and "unit" in meta:
        return meta["unit"]
    return doc.get("unit")


def read_opencv(path: str | Path, unit: str | None = None) -> list[Camera]:
    """Read an OpenCV-style YAML (``.yml``, ``.yaml``) or JSON (``.json``) calibration.

    Parameters
    ----------
    path : str or Path
    unit : str, optional
        Length unit of the extrinsics (see the module docstring).

    Returns
    -------
    list of Camera
        In file order.

    Raises
    ------
    CameraError
        A file that does not parse, holds no camera, or has a missing or malformed field.
    """
    path = Path(path)
    source = str(path)
    doc = _parse(path)
    if not isinstance(doc, Mapping):
        raise camera_error(source, f"expected a mapping at the top level, got {type(doc).__name__}")
    top_unit = unit if unit is not None else _file_unit(doc)
    tables: list[tuple[str, Any]]
    if any(k in doc for k in KEYS["matrix"]):
        tables = [(path.stem, doc)]
    elif "cameras" in doc:
        cams = doc["cameras"]
        if isinstance(cams, Mapping):
            tables = list(cams.items())
        elif isinstance(cams, list):
            tables = [(f"cam_{i}", t) for i, t in enumerate(cams)]
        else:
            raise camera_error(
                source, "expected a list or a mapping of camera tables", field="cameras"
            )
    else:
        tables = [(k, v) for k, v in doc.items() if k != "metadata" and _is_camera_table(v)]
    if not tables:
        raise camera_error(
            source,
            "no camera found: expected a camera matrix key ("
            + ", ".join(KEYS["matrix"])
            + ") at the top level, a 'cameras' list or mapping, or camera tables by name",
        )
    cameras = []
    for key, table in tables:
        own = table.get("unit") if isinstance(table, Mapping) else None
        cam_unit = unit if unit is not None else (own if own is not None else top_unit)
        cameras.append(camera_from_table(table, source, default_name=str(key), unit=cam_unit))
    check_unique_names(cameras, source)
    return cameras


FORMAT = "opencv"
SUFFIXES = (".json", ".yml", ".yaml")


def sniff(path: str | Path) -> bool:
    """True when the file is ``cv2.FileStorage`` YAML, or YAML/JSON holding a mapping."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if text.startswith("%YAML:"):
        return True
    try:
        return isinstance(_parse(path), Mapping)
    except CameraError:
        return False


def read(path: str | Path, *, unit: str | None = None) -> list[Camera]:
    """The format contract's call: :func:`read_opencv`."""
    return read_opencv(path, unit)
