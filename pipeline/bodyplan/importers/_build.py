"""Turn a source model's per-body transform chains into body-plan joints.

Every importer describes each source body (link, segment, BVH joint) as the chain of
elementary steps that carries its parent body's frame to its own: fixed transforms
(:class:`Fixed`), hinges and slides (:class:`Axis`) and ball joints (:class:`Ball`), in the
order the source engine applies them. :class:`PlanBuilder` turns each chain into one or
more body-plan joints so that

- the body's own node sits at the body's origin *after* its DOFs (a body-plan joint's
  keypoint is its origin before its own DOFs, so a body whose DOFs move its origin, a
  slide or a rotation about an anchor off the origin, gets a fixed node of its own below
  a helper node that carries the DOFs);
- a fixed transform after a DOF starts a new node (a body-plan joint's rest offset applies
  before its DOFs);
- a ball joint gets a node of its own (``kind: ball`` holds nothing else).

Helper nodes are named after the source joint. The builder writes the JSON object the
body-plan parser reads, so imported plans pass the same validation as files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.kinematics.rotations import quat_multiply, quat_normalize, quat_to_matrix

__all__ = ["Axis", "Ball", "Driven", "Fixed", "PlanBuilder", "Step", "euler_quat", "is_identity"]

_IDENTITY_Q = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass(frozen=True)
class Fixed:
    """A constant transform: translate by ``pos`` then rotate by ``quat`` (w, x, y, z)."""

    pos: np.ndarray
    quat: np.ndarray = field(default_factory=lambda: _IDENTITY_Q.copy())


@dataclass(frozen=True)
class Axis:
    """A hinge (``type="hinge"``, rad) or slide (``type="slide"``, length) coordinate."""

    type: str
    axis: np.ndarray
    name: str | None
    limits: tuple[float, float] | None = None
    node: str | None = None
    neutral: float = 0.0


@dataclass(frozen=True)
class Ball:
    """A ball joint as ``kind: ball`` (swing-twist) with its twist ``axis``."""

    axis: np.ndarray
    node: str
    swing_limit: float | None = None
    twist_limit: tuple[float, float] | None = None


@dataclass(frozen=True)
class Driven:
    """A hinge or slide whose value is ``function(coordinate)`` (a version-3 driven axis).

    ``function`` is the JSON object of :mod:`pipeline.bodyplan.functions`.
    """

    type: str
    axis: np.ndarray
    coordinate: str
    function: dict[str, Any]
    node: str | None = None


Step = Fixed | Axis | Ball | Driven


def is_identity(step: Fixed, tol: float = 0.0) -> bool:
    """True when a fixed transform moves nothing (to ``tol``)."""
    q = np.asarray(step.quat, dtype=np.float64)
    return bool(np.all(np.abs(step.pos) <= tol) and (np.all(np.abs(q[1:]) <= tol) and q[0] > 0))


def compose(a: Fixed, b: Fixed) -> Fixed:
    """The transform ``a`` then ``b`` (``b`` expressed in ``a``'s frame)."""
    pos = np.asarray(a.pos, float) + quat_to_matrix(np.asarray(a.quat, float)) @ np.asarray(
        b.pos, float
    )
    return Fixed(pos, quat_normalize(quat_multiply(np.asarray(a.quat, float), b.quat)))


def inverse(a: Fixed) -> Fixed:
    """The inverse transform of ``a``."""
    q = np.asarray(a.quat, float) * np.array([1.0, -1.0, -1.0, -1.0])
    return Fixed(-(quat_to_matrix(q) @ np.asarray(a.pos, float)), q)


def euler_quat(angles: Sequence[float], axes: str) -> np.ndarray:
    """Quaternion of intrinsic rotations about ``axes`` (e.g. ``"xyz"``), applied in order."""
    q = _IDENTITY_Q.copy()
    for angle, name in zip(angles, axes, strict=True):
        v = np.zeros(3)
        v["xyz".index(name.lower())] = np.sin(0.5 * angle)
        q = quat_multiply(q, np.concatenate([[np.cos(0.5 * angle)], v]))
    return quat_normalize(q)


def _floats(v: Iterable[float]) -> list[float]:
    return [float(x) for x in v]


def _canonical_quat(q: np.ndarray) -> list[float]:
    q = quat_normalize(np.asarray(q, float))
    return _floats(q if q[0] >= 0 else -q)


class PlanBuilder:
    """Collect body-plan joints, parents first, with unique names.

    Parameters
    ----------
    reserved : iterable of str
        Names helper nodes must not take (the source's body names).
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.joints: list[dict[str, Any]] = []
        self._names: set[str] = set()
        self._reserved = set(reserved)
        self._balls: dict[str, str] = {}
        #: Version-3 couplings (JSON objects) the plan gets.
        self.couplings: list[dict[str, Any]] = []

    @property
    def names(self) -> list[str]:
        """Joint names added so far, in order."""
        return [j["name"] for j in self.joints]

    def _unique(self, name: str, *, helper: bool) -> str:
        base = name
        taken = self._names | (self._reserved if helper else set())
        i = 2
        while name in taken:
            name = f"{base}_{i}"
            i += 1
        return name

    def _add(self, node: dict[str, Any]) -> None:
        self._names.add(node["name"])
        self.joints.append(node)

    def add_body(self, body: str, parent: str | None, steps: Sequence[Step]) -> str:
        """Add a source body reached from node ``parent`` through ``steps``.

        Parameters
        ----------
        body : str
            The body's name (its node keeps it unless already taken).
        parent : str or None
            The node of the parent body (``None`` for the root).
        steps : sequence of Fixed, Axis or Ball
            In the order the source applies them.

        Returns
        -------
        str
            Name of the node at the body's origin, the parent of its children's chains.
        """
        attach = parent
        pending = Fixed(np.zeros(3))
        current: dict[str, Any] | None = None
        last_ball: dict[str, Any] | None = None

        def start(helper: str | None) -> dict[str, Any]:
            return {
                "name": helper or body,
                "parent": attach,
                "offset_pos": _floats(pending.pos),
                "offset_quat": _canonical_quat(pending.quat),
                "dofs": [],
            }

        def close(node: dict[str, Any], helper: bool = True) -> None:
            nonlocal attach
            node["name"] = self._unique(node["name"], helper=helper)
            self._add(node)
            attach = node["name"]

        for step in steps:
            if isinstance(step, Fixed):
                if is_identity(step):
                    continue
                last_ball = None
                if current is not None:
                    close(current)
                    current = None
                pending = compose(pending, step)
            elif isinstance(step, Ball):
                if current is not None:
                    close(current)
                    current = None
                node = start(step.node)
                del node["dofs"]
                node.update({"kind": "ball", "axis": _floats(step.axis)})
                if step.swing_limit is not None:
                    node["swing_limit"] = float(step.swing_limit)
                if step.twist_limit is not None:
                    node["twist_limit"] = _floats(step.twist_limit)
                node["neutral"] = [0.0, 0.0, 0.0]
                pending = Fixed(np.zeros(3))
                close(node)
                self._balls[step.node] = node["name"]
                last_ball = node
            else:
                last_ball = None
                if current is None:
                    current = start(step.node)
                    pending = Fixed(np.zeros(3))
                if isinstance(step, Driven):
                    current["dofs"].append(
                        {
                            "type": step.type,
                            "axis": _floats(step.axis),
                            "coordinate": step.coordinate,
                            "function": step.function,
                        }
                    )
                    continue
                dof: dict[str, Any] = {"type": step.type, "axis": _floats(step.axis)}
                if step.name is not None:
                    dof["name"] = step.name
                neutral = float(step.neutral)
                if step.limits is not None:
                    neutral = min(max(neutral, step.limits[0]), step.limits[1])
                dof["neutral"] = neutral
                dof["limits"] = None if step.limits is None else _floats(step.limits)
                current["dofs"].append(dof)
        if current is not None:
            if not any(d["type"] == "slide" for d in current["dofs"]):
                current["name"] = body
                close(current, helper=False)
                return current["name"]
            close(current)
            pending = Fixed(np.zeros(3))
        elif last_ball is not None:
            # a ball turns about the body origin without moving it: its node is the body's
            return self._rename(last_ball["name"], body)
        node = start(None)
        node["name"] = self._unique(body, helper=False)
        self._add(node)
        return node["name"]

    def ball_node(self, label: str) -> str:
        """Final node name of the ball joint added with ``Ball(node=label)``."""
        return self._balls[label]

    def _rename(self, old: str, new: str) -> str:
        if new in self._names:
            return old
        self._names.discard(old)
        self._names.add(new)
        self._balls = {k: (new if v == old else v) for k, v in self._balls.items()}
        for j in self.joints:
            if j["name"] == old:
                j["name"] = new
            if j["parent"] == old:
                j["parent"] = new
        return new

    def add_point(self, name: str, parent: str, pos: Sequence[float], quat=None) -> str:
        """Add a fixed keypoint (a site, marker or end site) on node ``parent``."""
        node = {
            "name": self._unique(name, helper=False),
            "parent": parent,
            "offset_pos": _floats(pos),
            "offset_quat": _canonical_quat(_IDENTITY_Q if quat is None else np.asarray(quat)),
            "dofs": [],
        }
        self._add(node)
        return node["name"]

    def plan_dict(self, fixed_base: bool, name: str | None, extras: dict[str, Any]) -> dict:
        """The body-plan JSON object (version 2 with a ball joint, 3 with driven axes)."""
        out: dict[str, Any] = {}
        if any("kind" in j for j in self.joints):
            out["version"] = 2
        driven = any("function" in d for j in self.joints for d in j.get("dofs", ()))
        if driven or self.couplings:
            out["version"] = 3
            if self.couplings:
                out["couplings"] = self.couplings
        out["fixed_base"] = fixed_base
        if name:
            out["x-name"] = name
        out.update(extras)
        out["joints"] = self.joints
        return out
