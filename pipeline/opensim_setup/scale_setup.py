"""OpenSim ``ScaleTool`` setup files (``Setup_Scale.xml``).

What is read, under ``<OpenSimDocument><ScaleTool name=...>``:

- ``mass``: the subject's mass (kg); ``-1`` or absent keeps the model's mass.
- ``GenericModelMaker``: ``model_file`` (the generic ``.osim``) and ``marker_set_file``
  (a ``MarkerSet`` that replaces or adds to the model's markers; optional).
- ``ModelScaler``: ``apply``, ``scaling_order`` (``measurements`` and ``manualScale`` in
  any sequence, OpenSim applies them in that order, a later one overwriting a body's
  factors), ``MeasurementSet`` (each applied ``Measurement``: its marker pairs and
  the body scales with their axes), ``ScaleSet`` (each applied ``Scale``: segment and
  three factors), ``marker_file`` (the static ``.trc``), ``time_range``,
  ``preserve_mass_distribution``, ``output_model_file``, ``output_scale_file``.
- ``MarkerPlacer``: ``apply``, ``IKTaskSet`` (as in an IK setup), ``marker_file``,
  ``time_range``, ``output_model_file``, ``output_motion_file``.

Relative paths are resolved against the setup file's folder, as OpenSim's tool does.
Errors name the setup file and the field (:class:`pipeline.errors.ConfigError`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ConfigError
from pipeline.opensim_setup.ik_setup import (
    _UNSET,
    CoordinateTask,
    MarkerTask,
    _tasks,
    _text,
)
from pipeline.opensim_setup.setup_xml import tool_element

__all__ = [
    "SCALING_STEPS",
    "ManualScale",
    "Measurement",
    "ScaleSetup",
    "read_scale_setup",
]

#: ``ModelScaler.scaling_order`` steps.
SCALING_STEPS: tuple[str, ...] = ("measurements", "manualScale")
_AXES = ("X", "Y", "Z")


@dataclass(frozen=True)
class Measurement:
    """An applied ``Measurement``.

    Attributes
    ----------
    name : str
    pairs : tuple of (str, str)
        Marker pairs; the scale factor is the mean over pairs of the experimental
        distance (averaged over the time range) over the model's distance.
    bodies : tuple of (str, tuple of int)
        Bodies it scales and the axes (0, 1, 2 for X, Y, Z) it sets.
    """

    name: str
    pairs: tuple[tuple[str, str], ...]
    bodies: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ManualScale:
    """An applied ``Scale`` of the ``ScaleSet``: a segment's three factors."""

    segment: str
    factors: tuple[float, float, float]


@dataclass(frozen=True)
class ScaleSetup:
    """A parsed ``ScaleTool`` setup with absolute paths.

    Attributes
    ----------
    path : Path
    name : str
        The tool's ``name`` (the scaled model's name).
    mass : float or None
        Subject mass (kg), None to keep the model's.
    model_file : Path
    marker_set_file : Path or None
    scale : bool
        ``ModelScaler.apply``.
    scaling_order : tuple of str
    measurements : tuple of Measurement
    manual_scales : tuple of ManualScale
    scale_marker_file : Path or None
        The ``.trc`` the measurements use (required when they are).
    scale_time_range : (float, float)
    preserve_mass_distribution : bool
    place : bool
        ``MarkerPlacer.apply``.
    marker_tasks, coordinate_tasks : tuple
        The placer's ``IKTaskSet``.
    place_marker_file : Path or None
    place_time_range : (float, float)
    output_model_file : Path
        The model to write: the placer's when it applies, else the scaler's.
    output_scale_file : Path or None
        ``ModelScaler.output_scale_file``: the applied factors (a ``ScaleSet``).
    output_motion_file : Path or None
        ``MarkerPlacer.output_motion_file``: the static pose (``.mot``).
    """

    path: Path
    name: str
    mass: float | None
    model_file: Path
    marker_set_file: Path | None
    scale: bool
    scaling_order: tuple[str, ...]
    measurements: tuple[Measurement, ...]
    manual_scales: tuple[ManualScale, ...]
    scale_marker_file: Path | None
    scale_time_range: tuple[float, float]
    preserve_mass_distribution: bool
    place: bool
    marker_tasks: tuple[MarkerTask, ...]
    coordinate_tasks: tuple[CoordinateTask, ...]
    place_marker_file: Path | None
    place_time_range: tuple[float, float]
    output_model_file: Path
    output_scale_file: Path | None = None
    output_motion_file: Path | None = None


class _Reader:
    """Field readers that name the setup file and the ``ScaleTool`` field in errors."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, field: str, what: str) -> ConfigError:
        return ConfigError(f"{self.path}: ScaleTool.{field}: {what}")

    def number(self, field: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise self.fail(field, f"{text!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise self.fail(field, f"{text!r} is not a finite number")
        return value

    def numbers(self, field: str, text: str | None, n: int) -> tuple[float, ...]:
        parts = (text or "").split()
        if len(parts) != n:
            raise self.fail(field, f"{text!r}; expected {n} numbers")
        return tuple(self.number(field, p) for p in parts)

    def flag(self, field: str, text: str | None, default: bool = True) -> bool:
        if text is None or text == "":
            return default
        low = text.lower()
        if low not in ("true", "false"):
            raise self.fail(field, f"{text!r} is not true or false")
        return low == "true"

    def file(self, field: str, text: str | None, *, must_exist: bool) -> Path | None:
        if text is None or text.lower() in _UNSET:
            return None
        out = Path(text)
        out = out if out.is_absolute() else self.path.parent / out
        if must_exist and not out.is_file():
            raise self.fail(field, f"{text!r} not found (looked for {out})")
        return out

    def time_range(self, field: str, node: ET.Element | None) -> tuple[float, float]:
        text = None if node is None else _text(node, "time_range")
        if not text:
            return (float("-inf"), float("inf"))
        t0, t1 = self.numbers(field, text, 2)
        if t1 < t0:
            raise self.fail(field, f"{text!r} ends before it starts")
        return (t0, t1)


def _measurements(r: _Reader, scaler: ET.Element) -> tuple[Measurement, ...]:
    out = []
    for node in scaler.iter("Measurement"):
        name = (node.get("name") or "").strip()
        field = f"ModelScaler.MeasurementSet.Measurement[{name!r}]"
        if not r.flag(f"{field}.apply", _text(node, "apply")):
            continue
        pairs = []
        for k, pair in enumerate(node.iter("MarkerPair")):
            names = (_text(pair, "markers") or "").split()
            if len(names) != 2:
                raise r.fail(
                    f"{field}.MarkerPairSet.MarkerPair[{k}].markers",
                    f"{' '.join(names)!r}; expected two marker names",
                )
            pairs.append((names[0], names[1]))
        bodies = []
        for body in node.iter("BodyScale"):
            bname = (body.get("name") or "").strip()
            axes = (_text(body, "axes") or "X Y Z").split()
            bad = [a for a in axes if a.upper() not in _AXES]
            if bad or not axes:
                raise r.fail(
                    f"{field}.BodyScaleSet.BodyScale[{bname!r}].axes",
                    f"{' '.join(axes)!r}; valid: X, Y, Z",
                )
            bodies.append((bname, tuple(sorted({_AXES.index(a.upper()) for a in axes}))))
        if not pairs:
            raise r.fail(f"{field}.MarkerPairSet", "no marker pair; a measurement needs one")
        out.append(Measurement(name, tuple(pairs), tuple(bodies)))
    return tuple(out)


def _manual(r: _Reader, scaler: ET.Element) -> tuple[ManualScale, ...]:
    out = []
    for k, node in enumerate(scaler.iter("Scale")):
        field = f"ModelScaler.ScaleSet.Scale[{k}]"
        if not r.flag(f"{field}.apply", _text(node, "apply")):
            continue
        segment = _text(node, "segment") or ""
        if not segment:
            raise r.fail(f"{field}.segment", "missing; a scale names its body")
        f = r.numbers(f"{field}.scales", _text(node, "scales"), 3)
        if min(f) <= 0:
            raise r.fail(f"{field}.scales", f"{f} must be > 0")
        out.append(ManualScale(segment, (f[0], f[1], f[2])))
    return tuple(out)


def read_scale_setup(path: str | Path) -> ScaleSetup:
    """Read a ``ScaleTool`` setup (see the module docstring).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    ScaleSetup

    Raises
    ------
    ConfigError
        Not a Scale setup; a missing model, marker set or ``.trc``; an unknown scaling
        step; a bad time range, flag, factor, axis or task field; nothing to write. The
        message names the file and the field.
    """
    path, tool = tool_element(path, "ScaleTool")
    r = _Reader(path)
    text = _text(tool, "mass")
    mass = None if not text else r.number("mass", text)
    mass = None if mass is None or mass <= 0 else mass
    maker = tool.find("GenericModelMaker")
    model_text = None if maker is None else _text(maker, "model_file")
    model = r.file("GenericModelMaker.model_file", model_text, must_exist=True)
    if model is None:
        raise r.fail("GenericModelMaker.model_file", "missing; the setup must name the model")
    markers = (
        None
        if maker is None
        else r.file(
            "GenericModelMaker.marker_set_file", _text(maker, "marker_set_file"), must_exist=True
        )
    )
    scaler = tool.find("ModelScaler")
    placer = tool.find("MarkerPlacer")
    scale = scaler is not None and r.flag("ModelScaler.apply", _text(scaler, "apply"))
    place = placer is not None and r.flag("MarkerPlacer.apply", _text(placer, "apply"))
    order: tuple[str, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    manual: tuple[ManualScale, ...] = ()
    scale_trc = None
    if scaler is not None and scale:
        order = tuple((_text(scaler, "scaling_order") or "").split())
        bad = [s for s in order if s not in SCALING_STEPS]
        if bad:
            raise r.fail(
                "ModelScaler.scaling_order", f"{bad[0]!r}; valid: {', '.join(SCALING_STEPS)}"
            )
        measurements = _measurements(r, scaler) if "measurements" in order else ()
        manual = _manual(r, scaler) if "manualScale" in order else ()
        scale_trc = r.file("ModelScaler.marker_file", _text(scaler, "marker_file"), must_exist=True)
        if measurements and scale_trc is None:
            raise r.fail("ModelScaler.marker_file", "missing, but measurements are used")
    marker_tasks: tuple[MarkerTask, ...] = ()
    coord_tasks: tuple[CoordinateTask, ...] = ()
    place_trc = None
    if placer is not None and place:
        marker_tasks, coord_tasks = _tasks(path, placer, "ScaleTool.MarkerPlacer.IKTaskSet")
        if any(c.value_type == "from_file" for c in coord_tasks):
            name = next(c.name for c in coord_tasks if c.value_type == "from_file")
            raise r.fail(
                f"MarkerPlacer.IKTaskSet.IKCoordinateTask[{name!r}].value_type",
                "from_file is not supported for marker placement; valid: default_value, "
                "manual_value",
            )
        place_trc = r.file(
            "MarkerPlacer.marker_file", _text(placer, "marker_file"), must_exist=True
        )
        if place_trc is None:
            raise r.fail("MarkerPlacer.marker_file", "missing, but the marker placer applies")
    stage, node = ("MarkerPlacer", placer) if place else ("ModelScaler", scaler)
    out = (
        None
        if node is None
        else r.file(
            f"{stage}.output_model_file", _text(node, "output_model_file"), must_exist=False
        )
    )
    if out is None:
        raise r.fail(
            f"{stage}.output_model_file", "missing; the setup must name the model to write"
        )
    return ScaleSetup(
        path=path,
        name=(tool.get("name") or path.stem).strip(),
        mass=mass,
        model_file=model,
        marker_set_file=markers,
        scale=scale,
        scaling_order=order,
        measurements=measurements,
        manual_scales=manual,
        scale_marker_file=scale_trc,
        scale_time_range=r.time_range("ModelScaler.time_range", scaler),
        preserve_mass_distribution=scaler is not None
        and r.flag(
            "ModelScaler.preserve_mass_distribution",
            _text(scaler, "preserve_mass_distribution"),
            default=False,
        ),
        place=place,
        marker_tasks=marker_tasks,
        coordinate_tasks=coord_tasks,
        place_marker_file=place_trc,
        place_time_range=r.time_range("MarkerPlacer.time_range", placer),
        output_model_file=out,
        output_scale_file=None
        if scaler is None or not scale
        else r.file(
            "ModelScaler.output_scale_file", _text(scaler, "output_scale_file"), must_exist=False
        ),
        output_motion_file=None
        if placer is None or not place
        else r.file(
            "MarkerPlacer.output_motion_file",
            _text(placer, "output_motion_file"),
            must_exist=False,
        ),
    )
