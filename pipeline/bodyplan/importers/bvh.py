"""Import a BVH file's skeleton (its ``HIERARCHY``) as a body plan.

Built in (no extra). The text is parsed by :mod:`pipeline.formats.bvh_parse`, the parser
the tracks reader (:mod:`pipeline.tracks.readers.bvh`) uses too; the plan is built from
it here, and kinefit's forward kinematics of the plan is checked against the reader's
BVH forward kinematics. What comes across:

- each ``ROOT``/``JOINT`` becomes a joint (keypoint) at its ``OFFSET`` in the parent's
  frame; joint frames are parent-aligned at rest (BVH has no rest rotation);
- position channels become slides along the parent-aligned x, y, z (before the rotation;
  the joint's keypoint then sits below them on a node of its own);
- three rotation channels become one ``kind: ball`` joint (``rotations="ball"``, the
  default: swing-twist, twist axis along the first child's offset, no singularity at the
  rest pose) or three hinges in the channel order (``rotations="euler"``: BVH's own
  coordinates, intrinsic, ``R = R1 R2 R3``); one or two rotation channels are hinges;
- the root's position and rotation channels become the free root pose (its ``OFFSET`` is
  not a body-plan offset: with ``translation="add"``, BVH's reading, the root position is
  ``OFFSET + channels``; with ``"replace"`` the channels alone, as bvhio and Blender read
  it); a root without channels is a fixed base;
- every ``End Site`` becomes a fixed keypoint ``<joint>_end`` (the tracks reader's name).

Lengths are the file's own unit, which BVH does not record: ``x-unit`` is ``unit=`` or
``"unknown"``. Channel angles are degrees; DOF values are radians.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.importers._build import Axis, Ball, Fixed, PlanBuilder, Step
from pipeline.bodyplan.importers.finishing import finish_plan, starts_with
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan
from pipeline.formats import bvh_parse
from pipeline.formats.bvh_parse import Joint
from pipeline.provenance.hashing import tree_sha256

__all__ = ["import_plan", "sniff", "import_bvh", "read_bvh_motion"]

FORMAT = "bvh"
SUFFIXES = (".bvh",)
_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


def _failing(file: str) -> bvh_parse.Fail:
    return lambda reason: BodyPlanError(file, reason)


def _parse(text: str, file: str) -> tuple[list[Joint], list[list[int]]]:
    """The one-root HIERARCHY and every node's children."""
    nodes = bvh_parse.hierarchy(text, _failing(file))
    roots = [n for n in nodes if n.parent is None]
    if len(roots) > 1:
        raise BodyPlanError(
            file, f"line {roots[1].line}: a second ROOT: a body plan has one root (split the file)"
        )
    return nodes, bvh_parse.children(nodes)


def _twist_axis(node: int, nodes: list[Joint], kids: list[list[int]]) -> np.ndarray:
    for c in kids[node]:
        v = np.asarray(nodes[c].offset, dtype=np.float64)
        n = float(np.linalg.norm(v))
        if n > 1e-9:
            return v / n
    return np.array([0.0, 1.0, 0.0])


def import_bvh(
    path: str | Path,
    *,
    rotations: str = "ball",
    translation: str = "add",
    unit: str | None = None,
    source: str | None = None,
) -> BodyPlan:
    """Import a BVH skeleton.

    Parameters
    ----------
    path : str or Path
    rotations : {"ball", "euler"}
        Three rotation channels as one ball joint, or as three hinges in channel order.
    translation : {"add", "replace"}
        How the root's position channels combine with its ``OFFSET`` (recorded for
        :func:`~pipeline.bodyplan.engine_config.from_engine_configuration`).
    unit : str, optional
        Length unit of the file.
    source : str, optional
        Name used in messages.

    Returns
    -------
    BodyPlan
        ``x-source.engine_configuration`` describes the channel columns.

    Raises
    ------
    BodyPlanError
        A malformed or truncated HIERARCHY (with its line), several roots, repeated names,
        unknown options.
    """
    path = Path(path)
    file = source or str(path)
    if rotations not in ("ball", "euler"):
        raise BodyPlanError(file, f"rotations={rotations!r} is not one of ball, euler")
    if translation not in ("add", "replace"):
        raise BodyPlanError(file, f"translation={translation!r} is not one of add, replace")
    nodes, kids = _parse(bvh_parse.read_text(path, _failing(file)), file)
    builder = PlanBuilder(reserved=[n.name for n in nodes])
    node_of: dict[int, str] = {}
    entries: list[dict[str, Any]] = []
    column = 0
    root = nodes[0]
    free = any(c.endswith("position") for c in root.channels)
    for i, node in enumerate(nodes):
        if node.end_site:
            node_of[i] = builder.add_point(node.name, node_of[node.parent], node.offset)  # type: ignore[index]
            continue
        entry: dict[str, Any] = {
            "joint": node.name,
            "index": column,
            "channels": list(node.channels),
            "offset": list(node.offset),
            "translation": translation,
        }
        column += len(node.channels)
        steps: list[Step] = []
        rot = [c for c in node.channels if c.endswith("rotation")]
        if i == 0 and free:
            entry["type"] = "root"
            rot = []
        else:
            steps.append(Fixed(np.asarray(node.offset, dtype=np.float64)))
            slides = []
            for c in node.channels:
                if c.endswith("position"):
                    name = f"{node.name}/{c}"
                    steps.append(
                        Axis("slide", np.asarray(_AXES[c[0]]), name, node=f"{node.name}_position")
                    )
                    slides.append(name)
            entry.update({"type": "joint", "slides": slides})
        if len(rot) == 3 and rotations == "ball":
            steps.append(Ball(_twist_axis(i, nodes, kids), node.name))
            entry.update({"rotation": "ball", "node": node.name})
        elif rot:
            names = [f"{node.name}/{c}" for c in rot]
            steps.extend(
                Axis("hinge", np.asarray(_AXES[c[0]]), n, node=node.name)
                for c, n in zip(rot, names, strict=True)
            )
            entry.update({"rotation": "euler", "dofs": names})
        node_of[i] = builder.add_body(node.name, node_of.get(node.parent), steps)  # type: ignore[arg-type]
        entries.append(entry)
    for entry in entries:
        if entry.get("rotation") == "ball":
            entry["node"] = builder.ball_node(entry["node"])
    extras = {
        "x-unit": unit or "unknown",
        "x-source": {
            "format": FORMAT,
            "file": str(path),
            "sha256": tree_sha256(path),
            "rotations": rotations,
            "root": "free (position channels)" if free else "fixed",
            "root_offset": list(root.offset),
            "translation": translation,
            "angles": "channels in degrees, DOFs in radians",
            "unit_from": "unit= argument" if unit else "BVH records no unit",
            "engine_configuration": {"engine": "bvh", "n_channels": column, "entries": entries},
        },
    }
    return finish_plan(builder, not free, path.stem, extras, file)


def read_bvh_motion(path: str | Path, *, source: str | None = None) -> tuple[np.ndarray, float]:
    """The ``MOTION`` channel values of a BVH file, to drive its imported plan.

    Parameters
    ----------
    path : str or Path
    source : str, optional
        Name used in messages.

    Returns
    -------
    motion : (n_frames, n_channels) array
        In file column order (degrees and the file's length unit); pass it to
        :func:`~pipeline.bodyplan.engine_config.from_engine_configuration`.
    frame_time : float
        Seconds per frame.

    Raises
    ------
    BodyPlanError
        No ``MOTION`` section, frame lines that do not match the HIERARCHY's channel
        count or the ``Frames:`` count (with the line), non-numeric values.
    """
    path = Path(path)
    file = source or str(path)
    text = bvh_parse.read_text(path, _failing(file))
    nodes, _ = _parse(text, file)
    found = bvh_parse.motion(text, sum(len(n.channels) for n in nodes), _failing(file))
    return found.values, found.frame_time


def sniff(path: str | Path) -> bool:
    """True when the file's first element is BVH (``HIERARCHY``)."""
    return starts_with(path, "HIERARCHY")


#: The format contract's call (:mod:`pipeline.formats.contract`).
import_plan = import_bvh
