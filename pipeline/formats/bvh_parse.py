"""The BVH text parser that the BVH tracks reader and the BVH body-plan importer share.

A BVH file has a ``HIERARCHY`` of joints (``ROOT``/``JOINT`` blocks holding an ``OFFSET``,
``CHANNELS`` and their children, ``End Site`` blocks holding an ``OFFSET`` only) and a
``MOTION`` section (``Frames: N``, ``Frame Time: dt``, then N lines with every joint's
channel values in hierarchy order). This module reads the text and checks its structure;
what the joints and channels mean (forward kinematics, body-plan joints) is the callers'.

Every problem is reported through the caller's ``fail(reason) -> Exception``, so each
kind raises its own error class; reasons start with the file line (``line 12: ...``)
wherever one line is at fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "CHANNELS",
    "Fail",
    "Joint",
    "Motion",
    "children",
    "has_motion",
    "hierarchy",
    "motion",
    "read_text",
]

#: The channel names BVH allows (each at most once per joint).
CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
#: ``fail(reason) -> Exception``: the caller's error for a malformed file.
Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class Joint:
    """One hierarchy node: a joint, or an end site (no channels).

    Attributes
    ----------
    name : str
        The joint's name; an end site is ``<joint>_end``.
    parent : int or None
        Index of the parent node in hierarchy order; None for a ``ROOT``.
    offset : tuple of 3 float
        ``OFFSET`` in the parent's frame (the file's length unit).
    channels : tuple of str
        ``CHANNELS`` in file order (entries of :data:`CHANNELS`).
    end_site : bool
        True for an ``End Site``.
    line : int
        File line of the block's name (1-based).
    """

    name: str
    parent: int | None
    offset: tuple[float, ...]
    channels: tuple[str, ...]
    end_site: bool = False
    line: int = 0


@dataclass(frozen=True)
class Motion:
    """The ``MOTION`` section.

    Attributes
    ----------
    frame_time : float
        Seconds per frame (``Frame Time``).
    frame_time_text : str
        ``Frame Time`` as printed in the file.
    values : ndarray, shape (n_frames, n_channels), float64
        Channel values (degrees, the file's length unit), joints in hierarchy order.
    """

    frame_time: float
    frame_time_text: str
    values: np.ndarray


def read_text(path: str | Path, fail: Fail) -> str:
    """The file's text (UTF-8, a byte-order mark allowed)."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise fail("file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise fail(f"cannot read the file as UTF-8 text ({err})") from None


def _motion_line(lines: list[str]) -> int | None:
    return next((i for i, line in enumerate(lines) if line.strip().startswith("MOTION")), None)


class _Tokens:
    """Whitespace tokens of the HIERARCHY with their line numbers."""

    def __init__(self, lines: list[str], fail: Fail):
        self.fail = fail
        self.items = [(tok, n) for n, line in enumerate(lines, start=1) for tok in line.split()]
        self.i = 0

    def error(self, reason: str) -> Exception:
        line = self.items[min(self.i, len(self.items)) - 1][1] if self.items else 1
        return self.fail(f"line {line}: {reason}")

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
            raise self.error(f"expected {word!r} in the HIERARCHY, got {got!r}")

    def number(self, what: str) -> float:
        token = self.next(what)
        try:
            return float(token)
        except ValueError:
            raise self.error(f"{what}: {token!r} is not a number") from None


def _block(tok: _Tokens, name: str, line: int, parent: int | None, joints: list[Joint]) -> None:
    tok.expect("{")
    tok.expect("OFFSET")
    offset = tuple(tok.number(f"OFFSET of {name!r}") for _ in range(3))
    index = len(joints)
    word = tok.next(f"CHANNELS of {name!r}")
    if word != "CHANNELS":
        raise tok.error(f"joint {name!r}: expected CHANNELS after OFFSET, got {word!r}")
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
    joints.append(Joint(name, parent, offset, channels, line=line))
    while True:
        word = tok.next(f"JOINT, End Site or '}}' in {name!r}")
        if word == "}":
            return
        if word == "JOINT":
            child = tok.next("joint name")
            _block(tok, child, tok.line(), index, joints)
        elif word == "End":
            tok.expect("Site")
            end_line = tok.line()
            tok.expect("{")
            tok.expect("OFFSET")
            end = tuple(tok.number(f"End Site OFFSET of {name!r}") for _ in range(3))
            tok.expect("}")
            joints.append(Joint(f"{name}_end", index, end, (), end_site=True, line=end_line))
        else:
            raise tok.error(f"joint {name!r}: unexpected {word!r} in its block")


def hierarchy(text: str, fail: Fail) -> list[Joint]:
    """The ``HIERARCHY``: every node in file order (parents first), end sites included.

    Several ``ROOT`` blocks are returned one after the other (their ``parent`` is None).

    Raises
    ------
    Exception
        ``fail(reason)``: a missing ``HIERARCHY`` keyword or ``ROOT``, a malformed or
        truncated block (with its line), unknown or repeated channels, repeated names.
    """
    lines = text.splitlines()
    end = _motion_line(lines)
    tok = _Tokens(lines[:end], fail)
    tok.expect("HIERARCHY")
    joints: list[Joint] = []
    while tok.i < len(tok.items):
        tok.expect("ROOT")
        name = tok.next("root name")
        _block(tok, name, tok.line(), None, joints)
    if not joints:
        raise fail("the HIERARCHY has no ROOT")
    names = [j.name for j in joints]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise fail(f"joint names repeat: {dupes}")
    return joints


def children(joints: list[Joint]) -> list[list[int]]:
    """The children of every node (indices in hierarchy order)."""
    out: list[list[int]] = [[] for _ in joints]
    for i, joint in enumerate(joints):
        if joint.parent is not None:
            out[joint.parent].append(i)
    return out


def has_motion(text: str) -> bool:
    """True when the text has a ``MOTION`` line."""
    return _motion_line(text.splitlines()) is not None


def motion(text: str, n_channels: int, fail: Fail) -> Motion:
    """The ``MOTION`` section, checked against the HIERARCHY's channel count.

    Parameters
    ----------
    text : str
        The whole file.
    n_channels : int
        Channels the HIERARCHY declares (every row must hold that many values).

    Raises
    ------
    Exception
        ``fail(reason)``: no ``MOTION`` section, a malformed ``Frames`` or ``Frame Time``
        line, a frame count that does not match the rows, a row of the wrong length or a
        non-numeric value (with its line). Zero frames are not an error here.
    """
    lines = text.splitlines()
    start = _motion_line(lines)
    if start is None:
        raise fail("no MOTION section (truncated file?)")
    numbered = [(n, line.strip()) for n, line in enumerate(lines[start + 1 :], start + 2)]
    numbered = [(n, line) for n, line in numbered if line]
    if len(numbered) < 2 or not numbered[0][1].startswith("Frames:"):
        raise fail(f"line {start + 2}: MOTION must start with 'Frames: N' and 'Frame Time: dt'")
    (frames_at, frames_line), (time_at, time_line) = numbered[:2]
    try:
        n_frames = int(frames_line.split(":", 1)[1])
    except ValueError:
        raise fail(f"line {frames_at}: bad frame count line {frames_line!r}") from None
    if not time_line.startswith("Frame Time:"):
        raise fail(f"line {time_at}: expected 'Frame Time: dt', got {time_line!r}")
    frame_time_text = time_line.split(":", 1)[1].strip()
    try:
        frame_time = float(frame_time_text)
    except ValueError:
        raise fail(f"line {time_at}: bad frame time line {time_line!r}") from None
    rows = numbered[2:]
    if len(rows) != n_frames:
        raise fail(f"'Frames: {n_frames}' but {len(rows)} frame lines (truncated file?)")
    cells = [line.split() for _, line in rows]
    for i, ((number, _), row) in enumerate(zip(rows, cells, strict=True)):
        if len(row) != n_channels:
            raise fail(
                f"frame {i} has {len(row)} values, the HIERARCHY declares {n_channels} "
                f"channels (line {number}; truncated or malformed file)"
            )
    try:
        values = np.array(cells, dtype=np.float64).reshape(n_frames, n_channels)
    except ValueError:
        for (number, _), row in zip(rows, cells, strict=True):
            for cell in row:
                try:
                    float(cell)
                except ValueError:
                    raise fail(
                        f"line {number}: {cell!r} is not a number in the MOTION data"
                    ) from None
        raise
    return Motion(frame_time, frame_time_text, values)
