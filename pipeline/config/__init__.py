"""The run config: typed models (one source of every default), loading, files, cron."""

from pipeline.config.config_files import cluster_presets, config_dir, default_config_path
from pipeline.config.load import describe, load_run_config, make_run_config
from pipeline.config.models import (
    ArchiveConfig,
    CalibrationSettings,
    ChunkingConfig,
    OutputsConfig,
    RunConfig,
    ScheduleConfig,
    SolverSettings,
)
from pipeline.errors import ConfigError

__all__ = [
    "ArchiveConfig",
    "CalibrationSettings",
    "ChunkingConfig",
    "ConfigError",
    "OutputsConfig",
    "RunConfig",
    "ScheduleConfig",
    "SolverSettings",
    "cluster_presets",
    "config_dir",
    "default_config_path",
    "describe",
    "load_run_config",
    "make_run_config",
]
