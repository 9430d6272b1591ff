"""Scale an OpenSim model file's bodies as OpenSim's ``Model::scale`` does, on its XML.

Given per-body factors ``(sx, sy, sz)`` (in each body's own frame), every quantity fixed
in a scaled body is multiplied by its body's factors, as OpenSim's components scale
themselves:

- ``PhysicalOffsetFrame.translation`` (joint frames and other offset frames) by the
  factors of the body it is fixed to;
- a ``CustomJoint``'s translation axes (``SpatialTransform`` translation1-3 with a
  function, except an identity ``LinearFunction``, which is a DOF) by ``|axis| . s`` of
  the joint's parent body: the function is wrapped in a ``MultiplierFunction`` (or its
  existing multiplier's scale is multiplied), so the knees' splines keep their shape;
- markers' ``location``, ``PathPoint`` / ``ConditionalPathPoint`` locations, and a
  ``MovingPathPoint``'s location functions per axis;
- attached geometry's ``scale_factors``;
- mass properties: ``mass_center`` by the factors; with ``preserve_mass_distribution``
  the masses are kept, else each is multiplied by ``|sx sy sz|``; the inertia by ``s**2``
  for a uniform factor times the mass change (for unequal factors, OpenSim's cylinder of
  the same principal moments); finally, with a subject mass, every mass and inertia by
  ``subject_mass / total_mass``.

Not scaled: wrap objects and muscles' fibre and tendon lengths (kinematics do not use
them; OpenSim rescales those too). Bodies, markers, path points and mass properties
agree with OpenSim's ``Model::scale`` of the same factors to 1e-12.

:func:`add_markers` puts a ``MarkerSet`` file's markers (OpenSim 3 ``<body>`` or 4
``<socket_parent_frame>`` form) into the model; :func:`set_marker_locations` moves them.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pipeline.errors import ConfigError

__all__ = ["add_markers", "marker_bodies", "model_text", "scale_model", "set_marker_locations"]

_TRANSLATIONS = ("translation1", "translation2", "translation3")


def _vec(node: ET.Element | None) -> np.ndarray:
    return np.array([float(v) for v in (node.text or "").split()]) if node is not None else None


def _set(node: ET.Element, values) -> None:
    node.text = " ".join(repr(float(v)) for v in np.ravel(values))


def _model(root: ET.Element) -> ET.Element:
    model = root.find("Model")
    if model is None:
        raise ConfigError("the model file has no <Model> element")
    return model


def _frame_bodies(model: ET.Element) -> dict[str, str]:
    """Every frame name -> the body (or ``ground``) it is fixed to."""
    bodies = {b.get("name"): b.get("name") for b in model.iter("Body")}
    bodies["ground"] = "ground"
    parents = {
        f.get("name"): (f.findtext("socket_parent") or "").strip().split("/")[-1]
        for f in model.iter("PhysicalOffsetFrame")
    }
    out = dict(bodies)
    for name in parents:
        seen, cur = set(), name
        while cur in parents and cur not in seen:
            seen.add(cur)
            cur = parents[cur]
        out[name] = out.get(cur, cur)
    return out


def _body_of(path_text: str | None, frames: Mapping[str, str]) -> str | None:
    name = (path_text or "").strip().split("/")[-1]
    return frames.get(name, name or None)


def _wrap(holder: ET.Element, function: ET.Element, factor: float) -> None:
    """Multiply the function child ``function`` of ``holder`` by ``factor``."""
    if function.tag == "MultiplierFunction":
        scale = function.find("scale")
        if scale is None:
            scale = ET.SubElement(function, "scale")
            scale.text = "1"
        _set(scale, float(scale.text) * factor)
        return
    index = list(holder).index(function)
    wrapper = ET.Element("MultiplierFunction")
    if function.get("name") is not None:
        wrapper.set("name", function.get("name"))
        del function.attrib["name"]
    inner = ET.SubElement(wrapper, "function")
    inner.append(function)
    ET.SubElement(wrapper, "scale").text = repr(float(factor))
    holder.remove(function)
    holder.insert(index, wrapper)


def _function_child(node: ET.Element) -> ET.Element | None:
    for child in node:
        if child.tag not in ("axis", "coordinates") and isinstance(child.tag, str):
            return child
    return None


def _is_dof(function: ET.Element) -> bool:
    if function.tag != "LinearFunction":
        return False
    coeffs = [float(v) for v in (function.findtext("coefficients") or "").split()]
    return coeffs == [1.0, 0.0]


def _scale_inertia(body: ET.Element, s: np.ndarray, mass_ratio: float) -> None:
    """OpenSim's rule: exact for a uniform factor, else a cylinder of the same moments.

    The cylinder's axis is the smallest principal moment's (``I_a = m r^2 / 2``, the others
    ``m (l^2 / 12 + r^2 / 4)``); its radius scales with the two other factors, its length
    with the axis's; products of inertia scale with their two axes' factors.
    """
    node = body.find("inertia")
    if node is None:
        return
    inertia = _vec(node)
    mass = float(body.findtext("mass") or 0.0)
    new_mass = mass * mass_ratio
    if new_mass <= 0:
        _set(node, inertia * 0.0)
        return
    if np.allclose(s, s[0], rtol=1e-12, atol=0):
        _set(node, inertia * s[0] ** 2 * mass_ratio)
        return
    moments = inertia[:3]
    axis = int(np.argmin(moments))  # ties go to the first, as OpenSim's comparisons do
    other = 1 if axis == 0 else 0
    r2 = max(2.0 * moments[axis] / mass, 0.0)
    l2 = max(12.0 * (moments[other] - 0.25 * mass * r2) / mass, 0.0) * s[axis] ** 2
    rest = [k for k in range(3) if k != axis]
    r2 = r2 * s[rest[0]] * s[rest[1]]
    out = np.full(3, new_mass * (l2 / 12.0 + 0.25 * r2))
    out[axis] = 0.5 * new_mass * r2
    products = inertia[3:] * np.array([s[0] * s[1], s[0] * s[2], s[1] * s[2]]) * mass_ratio
    _set(node, np.concatenate([out, products]))


def scale_model(
    root: ET.Element,
    factors: Mapping[str, np.ndarray],
    *,
    preserve_mass_distribution: bool,
    subject_mass: float | None,
) -> None:
    """Scale the model under ``root`` in place (see the module docstring).

    Parameters
    ----------
    root : Element
        ``<OpenSimDocument>`` of an OpenSim 4 model.
    factors : mapping of str to (3,) array
        Per body name; bodies not named keep factor 1.
    preserve_mass_distribution : bool
    subject_mass : float or None
        Total mass (kg) to end with; None keeps the scaled total.
    """
    model = _model(root)
    frames = _frame_bodies(model)
    one = np.ones(3)

    def of(body: str | None) -> np.ndarray:
        return np.asarray(factors.get(body or "", one), np.float64)

    for frame in model.iter("PhysicalOffsetFrame"):
        node = frame.find("translation")
        if node is not None:
            _set(node, _vec(node) * of(_body_of(frame.findtext("socket_parent"), frames)))
    for joint in model.iter("CustomJoint"):
        own = {
            f.get("name"): _body_of(f.findtext("socket_parent"), frames)
            for f in joint.iter("PhysicalOffsetFrame")
        }
        name = (joint.findtext("socket_parent_frame") or "").strip().split("/")[-1]
        s = of(own.get(name) or frames.get(name, name))
        for axis in joint.iter("TransformAxis"):
            if axis.get("name") not in _TRANSLATIONS:
                continue
            function = _function_child(axis)
            if function is None or _is_dof(function):
                continue
            direction = np.abs(_vec(axis.find("axis")))
            _wrap(axis, function, float(direction @ s))
    for tag in ("Marker", "PathPoint", "ConditionalPathPoint"):
        for point in model.iter(tag):
            node = point.find("location")
            if node is not None:
                _set(node, _vec(node) * of(_body_of(point.findtext("socket_parent_frame"), frames)))
    for point in model.iter("MovingPathPoint"):
        s = of(_body_of(point.findtext("socket_parent_frame"), frames))
        for k, tag in enumerate(("x_location", "y_location", "z_location")):
            holder = point.find(tag)
            function = None if holder is None else _function_child(holder)
            if function is not None:
                _wrap(holder, function, float(s[k]))
    for body in model.iter("Body"):
        s = of(body.get("name"))
        for geom in body.iter("attached_geometry"):
            for node in geom.iter("scale_factors"):
                _set(node, _vec(node) * s)
        node = body.find("mass_center")
        if node is not None:
            _set(node, _vec(node) * s)
        ratio = 1.0 if preserve_mass_distribution else float(np.prod(np.abs(s)))
        _scale_inertia(body, s, ratio)
        node = body.find("mass")
        if node is not None:
            _set(node, float(node.text) * ratio)
    if subject_mass is not None:
        total = sum(float(b.findtext("mass") or 0.0) for b in model.iter("Body"))
        if total > 0:
            k = subject_mass / total
            for body in model.iter("Body"):
                for tag in ("mass", "inertia"):
                    node = body.find(tag)
                    if node is not None:
                        _set(node, _vec(node) * k)


def add_markers(root: ET.Element, marker_set_file: Path) -> None:
    """Put the markers of ``marker_set_file`` into the model (same names replaced).

    Raises
    ------
    ConfigError
        Not a marker set, or a marker on a body the model does not have.
    """
    model = _model(root)
    try:
        markers = ET.parse(marker_set_file).getroot()
    except ET.ParseError as exc:
        raise ConfigError(f"{marker_set_file}: not an XML file ({exc})") from None
    found = list(markers.iter("Marker"))
    if markers.find(".//MarkerSet") is None and markers.tag != "MarkerSet":
        raise ConfigError(f"{marker_set_file}: no <MarkerSet> element; not an OpenSim marker set")
    frames = _frame_bodies(model)
    marker_set = model.find("MarkerSet")
    if marker_set is None:
        marker_set = ET.SubElement(model, "MarkerSet", {"name": "markerset"})
    objects = marker_set.find("objects")
    if objects is None:
        objects = ET.SubElement(marker_set, "objects")
    existing = {m.get("name"): m for m in objects.findall("Marker")}
    for m in found:
        name = m.get("name")
        body = (m.findtext("body") or "").strip() or _body_of(
            m.findtext("socket_parent_frame"), frames
        )
        if body not in frames:
            raise ConfigError(
                f"{marker_set_file}: MarkerSet.Marker[{name!r}].body: {body!r} is not a body "
                f"of the model; bodies: {', '.join(b for b in frames if frames[b] == b)}"
            )
        new = ET.Element("Marker", {"name": name})
        path = "/ground" if body == "ground" else f"/bodyset/{body}"
        ET.SubElement(new, "socket_parent_frame").text = path
        ET.SubElement(new, "location").text = " ".join((m.findtext("location") or "0 0 0").split())
        ET.SubElement(new, "fixed").text = (m.findtext("fixed") or "false").strip()
        if name in existing:
            objects.remove(existing[name])
        objects.append(new)


def marker_bodies(root: ET.Element) -> dict[str, tuple[str, bool]]:
    """Marker name -> (body, fixed) of the model's markers."""
    model = _model(root)
    frames = _frame_bodies(model)
    return {
        m.get("name"): (
            _body_of(m.findtext("socket_parent_frame"), frames) or "",
            (m.findtext("fixed") or "false").strip().lower() == "true",
        )
        for m in model.iter("Marker")
    }


def set_marker_locations(root: ET.Element, locations: Mapping[str, np.ndarray]) -> None:
    """Set the named markers' ``location`` (metres, in their body's frame)."""
    for m in _model(root).iter("Marker"):
        if m.get("name") in locations:
            _set(m.find("location"), locations[m.get("name")])


def model_text(root: ET.Element, name: str | None = None) -> str:
    """The document as text, the model renamed to ``name`` when given."""
    root = copy.deepcopy(root)
    if name:
        _model(root).set("name", name)
    ET.indent(root, space="\t")
    return '<?xml version="1.0" encoding="UTF-8" ?>\n' + ET.tostring(root, encoding="unicode")
