"""Import a BVH file's skeleton (its ``HIERARCHY``) as a body plan.

Built in (no extra). The importer has its own small parser, separate from the tracks
reader (:mod:`pipeline.tracks.readers.bvh`), so the two check each other. What comes
across:

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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.errors import BodyPlanError
from pipeline.bodyplan.importers._build import Axis, Ball, Fixed, PlanBuilder, Step
from pipeline.bodyplan.importers._common import finish_plan
from pipeline.bodyplan.model import BodyPlan
from pipeline.provenance.hashing import tree_sha256

__all__ = ["import_bvh", "read_bvh_motion"]

FORMAT = "bvh"
CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


@dataclass
class _Node:
    name: str
    parent: int | None
    offset: tuple[float, float, float]
    channels: tuple[str, ...]
    line: int
    end_site: bool = False
    children: list[int] = field(default_factory=list)


class _Tokens:
    """Whitespace tokens of the HIERARCHY with their line numbers."""

    def __init__(self, file: str, text: str):
        self.file = file
        self.items: list[tuple[str, int]] = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip().startswith("MOTION"):
                break
            self.items.extend((tok, n) for tok in line.split())
        self.i = 0

    def error(self, reason: str) -> BodyPlanError:
        line = self.items[min(self.i, len(self.items)) - 1][1] if self.items else 1
        return BodyPlanError(self.file, f"line {line}: {reason}")

    def next(self, what: str) -> str:
        if self.i >= len(self.items):
            raise self.error(f"the HIERARCHY ends early, expected {what} (truncated file?)")
        self.i += 1
        return self.items[self.i - 1][0]

    def line(self) -> int:
        return self.items[self.i - 1][1]

    def expect(self, word: str) -> None:
        got = self.next(repr(word))
        if got != word:
            raise self.error(f"expected {word!r}, got {got!r}")

    def number(self, what: str) -> float:
        token = self.next(what)
        try:
            return float(token)
        except ValueError:
            raise self.error(f"{what}: {token!r} is not a number") from None


def _block(tok: _Tokens, name: str, parent: int | None, nodes: list[_Node]) -> None:
    line = tok.line()
    tok.expect("{")
    tok.expect("OFFSET")
    offset = tuple(tok.number(f"OFFSET of {name!r}") for _ in range(3))
    index = len(nodes)
    tok.expect("CHANNELS")
    count = tok.number(f"CHANNELS count of {name!r}")
    if count != int(count) or not 0 <= count <= 6:
        raise tok.error(f"joint {name!r}: CHANNELS count {count:g} is not 0..6")
    channels = tuple(tok.next(f"channel of {name!r}") for _ in range(int(count)))
    bad = [c for c in channels if c not in CHANNELS]
    if bad or len(set(channels)) != len(channels):
        raise tok.error(
            f"joint {name!r}: channels {list(channels)}; valid: {', '.join(CHANNELS)}, "
            "each at most once"
        )
    nodes.append(_Node(name, parent, offset, channels, line))  # type: ignore[arg-type]
    if parent is not None:
        nodes[parent].children.append(index)
    while True:
        word = tok.next(f"JOINT, End Site or '}}' in {name!r}")
        if word == "}":
            return
        if word == "JOINT":
            _block(tok, tok.next("joint name"), index, nodes)
        elif word == "End":
            tok.expect("Site")
            end_line = tok.line()
            tok.expect("{")
            tok.expect("OFFSET")
            end = tuple(tok.number(f"End Site OFFSET of {name!r}") for _ in range(3))
            tok.expect("}")
            nodes.append(_Node(f"{name}_end", index, end, (), end_line, True))  # type: ignore[arg-type]
            nodes[index].children.append(len(nodes) - 1)
        else:
            raise tok.error(f"joint {name!r}: unexpected {word!r} in its block")


def _parse(path: Path, file: str) -> list[_Node]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise BodyPlanError(file, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BodyPlanError(file, f"cannot read the file as UTF-8 text ({exc})") from None
    tok = _Tokens(file, text)
    tok.expect("HIERARCHY")
    nodes: list[_Node] = []
    roots = 0
    while tok.i < len(tok.items):
        tok.expect("ROOT")
        roots += 1
        if roots > 1:
            raise tok.error("a second ROOT: a body plan has one root (split the file)")
        _block(tok, tok.next("root name"), None, nodes)
    if not nodes:
        raise BodyPlanError(file, "the HIERARCHY has no ROOT")
    names = [n.name for n in nodes]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise BodyPlanError(file, f"joint names repeat: {dupes}")
    return nodes


def _twist_axis(node: _Node, nodes: list[_Node]) -> np.ndarray:
    for c in node.children:
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
    nodes = _parse(path, file)
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
            steps.append(Ball(_twist_axis(node, nodes), node.name))
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
    nodes = _parse(path, file)
    n_channels = sum(len(n.channels) for n in nodes)
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("MOTION")), None)
    if start is None:
        raise BodyPlanError(file, "no MOTION section (truncated file?)")
    try:
        n_frames = int(lines[start + 1].split(":", 1)[1])
        frame_time = float(lines[start + 2].split(":", 1)[1])
    except (IndexError, ValueError):
        raise BodyPlanError(
            file, f"line {start + 2}: MOTION must start with 'Frames: N' and 'Frame Time: dt'"
        ) from None
    rows = []
    for number, line in enumerate(lines[start + 3 :], start=start + 4):
        if not line.strip():
            continue
        values = line.split()
        if len(values) != n_channels:
            raise BodyPlanError(
                file,
                f"line {number}: {len(values)} values, the HIERARCHY has {n_channels} channels",
            )
        try:
            rows.append([float(v) for v in values])
        except ValueError:
            raise BodyPlanError(file, f"line {number}: a value is not a number") from None
    if len(rows) != n_frames:
        raise BodyPlanError(file, f"'Frames: {n_frames}' but {len(rows)} frame lines (truncated?)")
    return np.array(rows, dtype=np.float64).reshape(n_frames, n_channels), frame_time
