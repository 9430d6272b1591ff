"""OpenSim ``InverseKinematicsTool`` setup files (``Setup_IK.xml``).

What is read, under ``<OpenSimDocument><InverseKinematicsTool name=...>``:

- ``model_file``, ``marker_file`` (``.trc``), ``coordinate_file`` (``.mot``/``.sto``;
  empty or ``Unassigned``: none), ``output_motion_file``, ``results_directory``: relative
  paths are resolved against the setup file's folder, as OpenSim does (its tool runs in
  that folder).
- ``time_range``: two times in seconds; frames whose times fall in ``[t0, t1]`` are fitted.
- ``accuracy``: OpenSim's convergence accuracy (default 1e-5).
- ``IKTaskSet``: ``IKMarkerTask`` (``apply``, ``weight``) and ``IKCoordinateTask``
  (``apply``, ``weight``, ``value_type`` ``default_value`` / ``manual_value`` /
  ``from_file``, ``value``). Tasks with ``apply`` false are dropped, as OpenSim drops them.

Errors name the setup file and the field (:class:`pipeline.errors.ConfigError`).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ConfigError
from pipeline.opensim_setup.setup_xml import tool_element

__all__ = ["VALUE_TYPES", "CoordinateTask", "IKSetup", "MarkerTask", "read_ik_setup"]

#: ``IKCoordinateTask.value_type`` choices.
VALUE_TYPES: tuple[str, ...] = ("default_value", "manual_value", "from_file")
_UNSET = ("", "unassigned")


@dataclass(frozen=True)
class MarkerTask:
    """An applied ``IKMarkerTask``: the marker's weight."""

    name: str
    weight: float


@dataclass(frozen=True)
class CoordinateTask:
    """An applied ``IKCoordinateTask``.

    Attributes
    ----------
    name : str
        The coordinate.
    weight : float
        Weight of ``(q - target)^2`` (q in rad for rotational coordinates, m for
        translational ones).
    value_type : {"default_value", "manual_value", "from_file"}
    value : float
        The ``manual_value`` target (OpenSim units: rad or m).
    """

    name: str
    weight: float
    value_type: str
    value: float


@dataclass(frozen=True)
class IKSetup:
    """A parsed ``InverseKinematicsTool`` setup with absolute paths.

    Attributes
    ----------
    path : Path
        The setup file.
    name : str
        The tool's ``name`` (OpenSim names the marker-error file after it).
    model_file, marker_file : Path
    coordinate_file : Path or None
    output_motion_file : Path
    results_directory : Path
    time_range : (float, float)
        Seconds.
    accuracy : float
    marker_tasks : tuple of MarkerTask
    coordinate_tasks : tuple of CoordinateTask
    """

    path: Path
    name: str
    model_file: Path
    marker_file: Path
    coordinate_file: Path | None
    output_motion_file: Path
    results_directory: Path
    time_range: tuple[float, float]
    accuracy: float
    marker_tasks: tuple[MarkerTask, ...]
    coordinate_tasks: tuple[CoordinateTask, ...]

    @property
    def marker_errors_file(self) -> Path:
        """``<results_directory>/<name>_ik_marker_errors.sto``, as OpenSim names it."""
        return self.results_directory / f"{self.name}_ik_marker_errors.sto"


def _fail(path: Path, field: str, what: str) -> ConfigError:
    tool = "" if field.startswith("ScaleTool.") else "InverseKinematicsTool."
    return ConfigError(f"{path}: {tool}{field}: {what}")


def _text(node: ET.Element, tag: str) -> str | None:
    child = node.find(tag)
    return None if child is None else (child.text or "").strip()


def _number(path: Path, field: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _fail(path, field, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise _fail(path, field, f"{text!r} is not a finite number")
    return value


def _flag(path: Path, field: str, text: str | None) -> bool:
    if text is None or text == "":
        return True
    low = text.lower()
    if low not in ("true", "false"):
        raise _fail(path, field, f"{text!r} is not true or false")
    return low == "true"


def _file(
    path: Path, field: str, text: str | None, *, must_exist: bool, required: bool = True
) -> Path | None:
    if text is None or text.lower() in _UNSET:
        if required:
            raise _fail(path, field, "missing; the setup must name this file")
        return None
    out = Path(text)
    out = out if out.is_absolute() else path.parent / out
    if must_exist and not out.is_file():
        raise _fail(path, field, f"{text!r} not found (looked for {out})")
    return out


def _given(file: str | Path | None, option: str) -> Path | None:
    """A file given instead of the setup's, resolved; it must exist."""
    if file is None:
        return None
    out = Path(file).resolve()
    if not out.is_file():
        raise ConfigError(f"{option} {file}: no such file")
    return out


def _tasks(
    path: Path, tool: ET.Element, where: str = "IKTaskSet"
) -> tuple[tuple[MarkerTask, ...], tuple[CoordinateTask, ...]]:
    """The applied tasks under ``tool``; ``where`` prefixes their fields in messages."""
    markers: list[MarkerTask] = []
    coords: list[CoordinateTask] = []
    seen: set[str] = set()
    for node in tool.iter():
        if node.tag not in ("IKMarkerTask", "IKCoordinateTask"):
            continue
        name = (node.get("name") or "").strip()
        field = f"{where}.{node.tag}[{name!r}]"
        if not name:
            raise _fail(path, f"{where}.{node.tag}", "a task without a name")
        if (node.tag, name) in seen:
            raise _fail(path, field, "named twice")
        seen.add((node.tag, name))
        if not _flag(path, f"{field}.apply", _text(node, "apply")):
            continue
        text = _text(node, "weight")
        weight = 1.0 if not text else _number(path, f"{field}.weight", text)
        if weight < 0:
            raise _fail(path, f"{field}.weight", f"{weight} is negative")
        if node.tag == "IKMarkerTask":
            markers.append(MarkerTask(name, weight))
            continue
        kind = _text(node, "value_type") or "default_value"
        if kind not in VALUE_TYPES:
            raise _fail(path, f"{field}.value_type", f"{kind!r}; valid: {', '.join(VALUE_TYPES)}")
        text = _text(node, "value")
        value = 0.0 if not text else _number(path, f"{field}.value", text)
        coords.append(CoordinateTask(name, weight, kind, value))
    return tuple(markers), tuple(coords)


def read_ik_setup(
    path: str | Path,
    *,
    model_file: str | Path | None = None,
    marker_file: str | Path | None = None,
) -> IKSetup:
    """Read an ``InverseKinematicsTool`` setup (see the module docstring).

    Parameters
    ----------
    path : str or Path
    model_file, marker_file : str or Path, optional
        Files that replace the setup's ``model_file`` / ``marker_file`` (must exist).

    Returns
    -------
    IKSetup

    Raises
    ------
    ConfigError
        Not an IK setup; a missing model or marker file (or a named coordinate file that
        does not exist); a bad time range, accuracy, flag or task field; a
        ``from_file`` task without a coordinate file. The message names the file and field.
    """
    path, tool = tool_element(path, "InverseKinematicsTool")
    model = _given(model_file, "--model") or _file(
        path, "model_file", _text(tool, "model_file"), must_exist=True
    )
    marker = _given(marker_file, "--markers") or _file(
        path, "marker_file", _text(tool, "marker_file"), must_exist=True
    )
    coord = _file(
        path, "coordinate_file", _text(tool, "coordinate_file"), must_exist=True, required=False
    )
    text = _text(tool, "time_range")
    if not text:
        raise _fail(path, "time_range", "missing; expected two times in seconds")
    parts = text.split()
    if len(parts) != 2:
        raise _fail(path, "time_range", f"{text!r}; expected two times in seconds")
    t0, t1 = (_number(path, "time_range", p) for p in parts)
    if t1 < t0:
        raise _fail(path, "time_range", f"{text!r} ends before it starts")
    text = _text(tool, "accuracy")
    accuracy = 1e-5 if not text else _number(path, "accuracy", text)
    if accuracy <= 0:
        raise _fail(path, "accuracy", f"{accuracy} must be > 0")
    out_text = _text(tool, "output_motion_file")
    if not out_text or out_text.lower() in _UNSET:
        raise _fail(path, "output_motion_file", "missing; the setup must name the .mot to write")
    output = _file(path, "output_motion_file", out_text, must_exist=False)
    results = _text(tool, "results_directory") or "."
    results_dir = Path(results) if Path(results).is_absolute() else path.parent / results
    markers, coords = _tasks(path, tool)
    if coord is None and any(c.value_type == "from_file" for c in coords):
        name = next(c.name for c in coords if c.value_type == "from_file")
        raise _fail(
            path,
            f"IKTaskSet.IKCoordinateTask[{name!r}].value_type",
            "from_file, but the setup names no coordinate_file",
        )
    assert model is not None and marker is not None and output is not None
    return IKSetup(
        path=path,
        name=(tool.get("name") or path.stem).strip(),
        model_file=model,
        marker_file=marker,
        coordinate_file=coord,
        output_motion_file=output,
        results_directory=results_dir,
        time_range=(t0, t1),
        accuracy=accuracy,
        marker_tasks=markers,
        coordinate_tasks=coords,
    )
