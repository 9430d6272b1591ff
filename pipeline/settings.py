"""Fit settings from a run config file (``kinefit fit --config CFG.yaml``).

Superseded by :mod:`pipeline.config`: a fit config is a run config (only its ``solver``
and ``chunking`` sections matter here). Kept so that existing imports keep working.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import ChunkingConfig, ConfigError, load_run_config
from pipeline.solve import SolverConfig

#: The chunking settings of a fit (``chunk_frames``, ``overlap_frames``, ...).
FitSettings = ChunkingConfig
#: Raised for unreadable or invalid config files.
SettingsError = ConfigError

__all__ = ["FitSettings", "SettingsError", "load_fit_config"]


def load_fit_config(path: str | Path) -> tuple[SolverConfig, ChunkingConfig]:
    """Read the solver and chunking settings of a run config file.

    Raises
    ------
    ConfigError
        Unreadable file or invalid settings (the message names the file and key path).
    """
    config = load_run_config(path)
    return config.solver_config, config.chunking
