"""XML helpers shared by the MJCF, URDF and OpenSim importers: parse errors and line numbers.

The engines' own parsers (MuJoCo, OpenSim) and yourdfpy do not say on which line an
element sits, so the importers read the file once with the standard library's expat
parser as well: a malformed file becomes one :class:`BodyPlanError` with line and
column, and an error about an element can name its line.
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass
from pathlib import Path

from pipeline.bodyplan.load_errors import BodyPlanError

__all__ = ["Element", "XmlIndex", "read_xml"]


@dataclass(frozen=True)
class Element:
    """One XML element: tag, attributes, line, parent index and depth."""

    tag: str
    attrs: dict[str, str]
    line: int
    parent: int | None
    depth: int


class XmlIndex:
    """Every element of a file with its line, and a way to find them by tag and name."""

    def __init__(self, file: str, elements: list[Element], texts: dict[int, str]):
        self.file = file
        self.elements = elements
        self.texts = texts

    @property
    def root(self) -> Element:
        """The document element."""
        return self.elements[0]

    def find(self, tag: str, name: str | None = None) -> list[Element]:
        """Elements with ``tag`` (and attribute ``name`` equal to ``name`` when given)."""
        return [
            e
            for e in self.elements
            if e.tag == tag and (name is None or e.attrs.get("name") == name)
        ]

    def line(self, tag: str, name: str | None = None) -> int | None:
        """Line of the first element with ``tag`` and ``name``; ``None`` if absent."""
        found = self.find(tag, name)
        return found[0].line if found else None

    def where(self, tag: str, name: str | None = None) -> str:
        """``<tag name="...">`` (line N)``, for messages."""
        label = f'<{tag} name="{name}">' if name is not None else f"<{tag}>"
        line = self.line(tag, name)
        return f"{label} (line {line})" if line is not None else label


def read_xml(path: Path, file: str, what: str) -> XmlIndex:
    """Parse ``path`` with expat, or raise a :class:`BodyPlanError` naming line and column.

    Parameters
    ----------
    path : Path
    file : str
        Name used in messages.
    what : str
        The format, for messages (``"MJCF"``, ``"URDF"``, ``"OpenSim model"``).

    Returns
    -------
    XmlIndex
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BodyPlanError(file, "file not found") from None
    except IsADirectoryError:
        raise BodyPlanError(file, f"is a directory, not a {what} file") from None
    elements: list[Element] = []
    texts: dict[int, str] = {}
    stack: list[int] = []
    parser = xml.parsers.expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        parent = stack[-1] if stack else None
        elements.append(Element(tag, dict(attrs), parser.CurrentLineNumber, parent, len(stack)))
        stack.append(len(elements) - 1)

    def end(tag: str) -> None:
        stack.pop()

    def chars(text: str) -> None:
        if stack:
            texts[stack[-1]] = texts.get(stack[-1], "") + text

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        reason = xml.parsers.expat.ErrorString(exc.code)
        raise BodyPlanError(
            file,
            f"not a well-formed {what} XML file: {reason} at line {exc.lineno} column "
            f"{exc.offset + 1} (truncated or corrupt file?)",
        ) from None
    if not elements:
        raise BodyPlanError(file, f"no XML element: not a {what} file")
    return XmlIndex(file, elements, texts)
