"""The tool element of an OpenSim setup file, or one clear error naming the file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from pipeline.errors import ConfigError

__all__ = ["tool_element"]

#: What each tool's setup is called in messages.
KINDS = {"InverseKinematicsTool": "IK", "ScaleTool": "Scale"}


def tool_element(path: str | Path, tool: str) -> tuple[Path, ET.Element]:
    """The ``<tool>`` element of an OpenSim setup, the root or a child of ``<OpenSimDocument>``.

    Parameters
    ----------
    path : str or Path
        The setup file.
    tool : str
        The tool's element name, e.g. ``"InverseKinematicsTool"`` or ``"ScaleTool"``.

    Returns
    -------
    (Path, Element)
        The setup's resolved path (relative paths inside it are resolved against its
        folder, as OpenSim does) and the tool element.

    Raises
    ------
    ConfigError
        No such file, not XML, or no such tool element in it.
    """
    path = Path(path).resolve()
    kind = KINDS.get(tool, tool)
    if not path.is_file():
        raise ConfigError(f"{path}: no such {kind} setup file")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ConfigError(f"{path}: not an XML file ({exc})") from None
    element = root if root.tag == tool else root.find(tool)
    if element is None:
        raise ConfigError(f"{path}: no <{tool}> element; not an OpenSim {kind} setup")
    return path, element
