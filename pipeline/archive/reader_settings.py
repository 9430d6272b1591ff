"""How one tracks file is read: the reader settings of a session, most specific first.

A session's format, frame rate, target unit and reader options come from the run
config's ``archive`` section, overridden by what is said for that session alone (a
manifest entry, the options of ``kinefit ingest``). :func:`reader_settings` is that rule,
for the archive flow and the command line alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.config import ArchiveConfig

__all__ = ["ReaderSettings", "reader_settings"]


@dataclass(frozen=True)
class ReaderSettings:
    """The arguments of :func:`pipeline.tracks.read_tracks` for one file.

    Attributes
    ----------
    format : str or None
        Reader name; None: by suffix and content.
    fps : float or None
        Frames per second, used only if the file records none.
    to_unit : str or None
        Length unit to convert positions to; None: the file's.
    options : dict
        The reader's own and the shared options (``unit``, ``up_axis``, ...).
    """

    format: str | None = None
    fps: float | None = None
    to_unit: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def reader_settings(
    archive: ArchiveConfig | None = None,
    *,
    format: str | None = None,
    fps: float | None = None,
    to_unit: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ReaderSettings:
    """The settings of one file: the given ones over the archive config's.

    Parameters
    ----------
    archive : ArchiveConfig, optional
        The run config's ``archive`` section (its ``format``, ``fps``, ``options``);
        none: the defaults.
    format, fps, to_unit : optional
        Said for this file; None keeps the archive's value.
    options : mapping, optional
        Reader options said for this file; each replaces the archive option of its name.
        A ``to_unit`` among the options (archive configs may say it there) counts as
        ``to_unit``, which wins over it.

    Returns
    -------
    ReaderSettings
    """
    archive = archive or ArchiveConfig()
    merged = {**archive.options, **(options or {})}
    in_options = merged.pop("to_unit", None)
    return ReaderSettings(
        format=format if format is not None else archive.format,
        fps=fps if fps is not None else archive.fps,
        to_unit=to_unit if to_unit is not None else in_options,
        options=merged,
    )
