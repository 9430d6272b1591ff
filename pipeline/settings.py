"""Typed fit settings and their YAML form (``kinefit fit --config CFG.yaml``).

A fit config file holds the solver settings (:class:`pipeline.solve.SolverConfig` fields)
either at the top level or under ``solver:``, and optionally the chunking under ``fit:``::

    solver:
      n_iterations: 20
      mode: lm
      loss: huber
      loss_scale: 0.05
    fit:
      chunk_frames: 4096
      overlap_frames: 16
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from pipeline.solve import SolverConfig


class SettingsError(ValueError):
    """A fit config file is unreadable or names unknown settings."""


@dataclass(frozen=True)
class FitSettings:
    """How a session is cut into tasks.

    Attributes
    ----------
    chunk_frames : int or None
        Frames per time chunk and per task; None: the tracks store's time chunk.
        Larger chunks mean fewer tasks and wider numpy calls, smaller ones a finer
        progress bar and less lost work on a failure.
    overlap_frames : int
        Warm-up frames solved before each chunk (default 16); their disagreement with
        the previous chunk is the seam diagnostic.
    """

    chunk_frames: int | None = None
    overlap_frames: int = 16

    def __post_init__(self) -> None:
        if self.chunk_frames is not None and (
            not isinstance(self.chunk_frames, int) or self.chunk_frames < 1
        ):
            raise SettingsError(
                f"fit.chunk_frames: must be a positive integer or null, not {self.chunk_frames!r}"
            )
        if not isinstance(self.overlap_frames, int) or self.overlap_frames < 0:
            raise SettingsError(
                f"fit.overlap_frames: must be an integer >= 0, not {self.overlap_frames!r}"
            )


def load_fit_config(path: str | Path) -> tuple[SolverConfig, FitSettings]:
    """Read a fit config YAML file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    (SolverConfig, FitSettings)

    Raises
    ------
    SettingsError
        Unreadable file, wrong structure, unknown or invalid settings (the message names
        the file and lists the valid names).
    """
    path = Path(path)
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: cannot read the fit config ({exc})") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: a fit config is a YAML mapping (solver:, fit:)")
    if {"solver", "fit"} & set(data):
        unknown = sorted(set(data) - {"solver", "fit"})
        if unknown:
            raise SettingsError(f"{path}: unknown sections {unknown}; valid: solver, fit")
        solver, fit = data.get("solver") or {}, data.get("fit") or {}
    else:
        solver, fit = data, {}
    valid_fit = sorted(f.name for f in fields(FitSettings))
    unknown_fit = sorted(set(fit) - set(valid_fit))
    if unknown_fit:
        raise SettingsError(f"{path}: unknown fit settings {unknown_fit}; valid: {valid_fit}")
    try:
        return SolverConfig.from_dict(dict(solver)), FitSettings(**fit)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc
