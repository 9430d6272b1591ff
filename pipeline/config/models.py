"""The run config: one YAML file, validated by typed models (one per concern).

A run config says where an archive is and how its sessions are found (``archive``), which
body plan is fitted (``body_plan``, ``keypoint_map``), how (``solver``, ``chunking``),
where (``cluster``), what is written (``outputs``) and when it reruns (``schedule``).
Every section has defaults; ``kinefit config show`` prints the effective config::

    archive:
      path: /data/lab/tracks        # a folder or an fsspec URL (s3://bucket/tracks)
      patterns: ["**/*.csv"]        # globs, relative to path ...
      manifest: null                # ... or a YAML manifest (pipeline.archive.discover)
      naming: relative              # session name: file stem, or relative path
      fps: 100                      # only for files that do not record their rate
    body_plan: fly.json             # a body-plan JSON file, a shipped plan, or "auto"
    solver: {n_iterations: 20, loss: huber, loss_scale: 0.05}
    chunking: {chunk_frames: 4096, concurrent_sessions: 2}
    cluster: slurm                  # a preset (config/shipped/cluster/), or {preset: ..., ...}
    outputs: {root: /data/lab/kinefit}
    schedule: {cron: "0 3 * * *", timezone: Europe/Zurich}

Relative paths are relative to the config file's folder (to the current directory for
the built-in default). Unknown keys and wrong types are errors that name the key path and
the valid choices (:class:`ConfigError`). Files are read with ``yaml.safe_load`` only.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic import model_validator as _model_validator

from pipeline.cluster import ClusterConfig
from pipeline.config.config_files import (
    load_preset,
)
from pipeline.config.cron import check_cron
from pipeline.config.ik_setups import IKSetups
from pipeline.export.exporter_registry import AUTOMATIC_EXPORTS
from pipeline.solve import SolverConfig
from pipeline.store.fit import DEFAULT_OVERLAP_FRAMES
from pipeline.store.tracks import DEFAULT_CHUNK_FRAMES

__all__ = [
    "ArchiveConfig",
    "CalibrationSettings",
    "ChunkingConfig",
    "OutputsConfig",
    "RunConfig",
    "ScheduleConfig",
    "SolverSettings",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ArchiveConfig(_Section):
    """Where the raw session files are and which of them are sessions.

    Attributes
    ----------
    path : str
        A folder or an fsspec URL (``s3://``, ``gcs://``, ``memory://``, ...).
    patterns : list of str
        Globs relative to ``path`` (``**`` recurses); every match is a session.
    manifest : str or None
        A YAML manifest listing the sessions by name instead (see
        :func:`pipeline.archive.discover.read_manifest`); relative to ``path`` if not absolute.
    naming : {"stem", "relative"}
        Session name from a file: its name without suffixes, or its path relative to
        ``path`` without suffixes (keeps sub-folders apart).
    format : str or None
        Reader for every file (``kinefit ingest --format``); default by suffix/content.
    fps : float or None
        Frame rate (Hz) of files that do not record one; a file's own rate wins.
    options : dict
        Reader options (``skeleton_file``, ``unit``, ``up_axis``, ...); for multi-camera
        sessions ``unit`` is the calibration's length unit.
    camera_regex : str or None
        Multi-camera sessions from file names (Anipose's ``cam_regex``): a regex with
        exactly one group, searched in each matched file's name without suffixes; the
        group is the camera's name (as the calibration names it), and the name with the
        match removed (``_``, ``-``, ``.``, spaces stripped at its ends) is the session's,
        then placed as ``naming`` says. Files of one session become one multi-view session
        (``views``: camera -> file). With ``'_(cam[A-Z])$'``, ``trial1_camA.csv`` and
        ``trial1_camB.csv`` are session ``trial1``; ``'-cam([0-9]+)$'`` reads
        ``trial1-cam1.h5``. Every session needs two or more cameras. None (default): every
        file is its own session.
    calibration : str or None
        With ``camera_regex``: the sessions' camera calibration (Anipose/Pose2Sim TOML,
        OpenCV YAML/JSON). A URL or absolute path is one file for every session; a
        relative path (``calibration.toml``) is looked up beside each session's files,
        then in each folder above them up to ``path``, and the nearest wins (one file at
        the top for the whole archive, or one per session folder).
    """

    path: str = "archive"
    patterns: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    manifest: str | None = None
    naming: Literal["stem", "relative"] = "stem"
    format: str | None = None
    fps: float | None = Field(None, gt=0)
    options: dict[str, Any] = Field(default_factory=dict)
    camera_regex: str | None = None
    calibration: str | None = None

    @field_validator("camera_regex")
    @classmethod
    def _one_camera_group(cls, value: str | None) -> str | None:
        if value is None:
            return value
        example = "e.g. '_(cam[A-Z])$' for trial1_camA.csv or '-cam([0-9]+)$' for trial1-cam1.h5"
        try:
            groups = re.compile(value).groups
        except re.error as exc:
            raise ValueError(f"{value!r} is not a regex ({exc}); {example}") from None
        if groups != 1:
            raise ValueError(
                f"{value!r} has {groups} groups; it needs exactly one, the camera's name "
                f"(make others non-capturing: (?:...)), {example}"
            )
        return value

    @field_validator("calibration")
    @classmethod
    def _calibration_inside(cls, value: str | None) -> str | None:
        if value is not None and ("\\" in value or ".." in value.split("/") or not value):
            raise ValueError(f"{value!r}: give a file relative to archive.path (no '..'), or a URL")
        return value

    @_model_validator(mode="after")
    def _cameras_need_a_calibration(self) -> ArchiveConfig:
        if (self.camera_regex is None) != (self.calibration is None):
            given, other = (
                ("camera_regex", "calibration")
                if self.calibration is None
                else ("calibration", "camera_regex")
            )
            raise ValueError(
                f"archive.{given} is set but archive.{other} is not: multi-camera sessions "
                "found by file name need both (camera_regex: '_(cam[A-Z])$', calibration: "
                "calibration.toml); a manifest names each session's calibration itself"
            )
        return self

    @field_validator("patterns")
    @classmethod
    def _relative_globs(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if pattern.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", pattern):
                raise ValueError(f"{pattern!r} must stay inside archive.path (no '/' or '..')")
        return value

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        from pipeline.tracks.reader_registry import readers

        valid = list(readers())
        if value is not None and value not in valid:
            raise ValueError(f"unknown format {value!r}; valid formats: {', '.join(valid)}")
        return value


class ChunkingConfig(_Section):
    """How a session is stored and cut into tasks, and how many sessions run at once.

    Attributes
    ----------
    tracks_chunk_frames : int
        Frames per zarr chunk of an ingested tracks store (default 4096).
    chunk_frames : int or None
        Frames per fit task; None: the tracks store's chunk. Larger chunks mean wider
        numpy calls, smaller ones finer progress and less lost work on a failure.
    overlap_frames : int
        Warm-up frames solved before each chunk (default 16); their disagreement with
        the previous chunk is the seam diagnostic.
    concurrent_sessions : int
        Sessions fitted at once on the shared cluster (default 2).
    """

    tracks_chunk_frames: int = Field(DEFAULT_CHUNK_FRAMES, ge=1)
    chunk_frames: int | None = Field(None, ge=1)
    overlap_frames: int = Field(DEFAULT_OVERLAP_FRAMES, ge=0)
    concurrent_sessions: int = Field(2, ge=1)


def _solver_settings() -> type[BaseModel]:
    hints = typing.get_type_hints(SolverConfig)
    fields: dict[str, Any] = {
        f.name: (hints[f.name], f.default) for f in dataclasses.fields(SolverConfig)
    }

    def check(self: BaseModel) -> BaseModel:
        try:
            SolverConfig(**self.model_dump())
        except ValueError as exc:
            raise ValueError(str(exc).replace("SolverConfig.", "solver.")) from None
        return self

    return create_model(  # type: ignore[call-overload, no-any-return]
        "SolverSettings",
        __base__=_Section,
        __doc__="The solver settings (:class:`pipeline.solve.SolverConfig`, same fields).",
        __validators__={"_check": _model_validator(mode="after")(check)},
        **fields,
    )


SolverSettings = _solver_settings()


class OutputsConfig(_Section):
    """What is written where.

    Attributes
    ----------
    root : str
        Output folder; ``tracks/``, ``fits/`` and ``report.html`` go under it by default.
    tracks, fits : str or None
        Folders of the tracks and fit stores (``<session>.zarr`` each).
    report : str or None
        The archive's HTML report; default ``<root>/report.html``.
    write_report : bool
        Write the HTML report after each reprocessing run.
    report_detailed : int
        Sessions of the report given full plots, worst first (each costs seconds).
    exports : list of str
        Exports written beside each fitted session's store, by name from the exporters'
        table (:data:`pipeline.export.exporter_registry.AUTOMATIC_EXPORTS`: csv, bvh, trc, mot,
        nwb, qpos, movement); the reprocess flow rewrites only stale ones.
    """

    root: str = "kinefit-out"
    tracks: str | None = None
    fits: str | None = None
    report: str | None = None
    write_report: bool = True
    report_detailed: int = Field(3, ge=0)
    exports: list[Literal[AUTOMATIC_EXPORTS]] = Field(default_factory=list)  # type: ignore[valid-type]

    @property
    def tracks_dir(self) -> Path:
        """Folder of the tracks stores."""
        return Path(self.tracks or Path(self.root) / "tracks")

    @property
    def fits_dir(self) -> Path:
        """Folder of the fit stores."""
        return Path(self.fits or Path(self.root) / "fits")

    @property
    def report_path(self) -> Path:
        """The archive report's HTML file."""
        return Path(self.report or Path(self.root) / "report.html")


class CalibrationSettings(_Section):
    """Subject calibration before fitting (:mod:`pipeline.calibrate`).

    Attributes
    ----------
    mode : {"none", "per_session", "per_identity"}
        ``none`` fits the body plan as it is (default); ``per_session`` calibrates every
        session's individuals on their own; ``per_identity`` calibrates each identity once
        from all of its sessions (identities: the track's individual name, or the
        manifest's ``individuals``) and stores it in ``<outputs.root>/calibrations/``.
    n_frames : int
        Calibration frames per identity over its sessions (default 1000).
    min_frames : int
        Fewer well-observed frames is an error for that identity (default 50).
    method : {"schur", "alternation"}
        The shape step (default ``schur``: joint Gauss-Newton, poses eliminated).
    tolerance : float
        A session whose overall scale differs from its identity's median session by more
        than this fraction is flagged (default 0.03).
    recalibrate : bool
        Recompute stored calibrations even when current (then refit their sessions).
    """

    mode: Literal["none", "per_session", "per_identity"] = "none"
    n_frames: int = Field(1000, ge=1)
    min_frames: int = Field(50, ge=1)
    method: Literal["schur", "alternation"] = "schur"
    tolerance: float = Field(0.03, gt=0)
    recalibrate: bool = False


class ScheduleConfig(_Section):
    """When ``kinefit serve`` reruns the archive.

    Attributes
    ----------
    cron : str
        Five-field cron expression (minute hour day month weekday), default 03:00 daily.
    timezone : str
        IANA time zone of the cron expression (``UTC``, ``Europe/Zurich``).
    deployment : str
        Name of the Prefect deployment.
    """

    cron: str = "0 3 * * *"
    timezone: str = "UTC"
    deployment: str = Field("kinefit-reprocess", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        check_cron(value)
        return value

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r} (IANA names: UTC, Europe/Zurich, ...)"
            ) from None
        return value


class RunConfig(_Section):
    """A whole run: archive, plan, solver, chunking, cluster, outputs, schedule, calibration."""

    archive: ArchiveConfig = Field(default_factory=ArchiveConfig)
    body_plan: str = "mannequin"
    keypoint_map: dict[str, str] | str | None = None
    solver: SolverSettings = Field(default_factory=SolverSettings)  # type: ignore[valid-type]
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    outputs: OutputsConfig = Field(default_factory=OutputsConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    calibration: CalibrationSettings = Field(default_factory=CalibrationSettings)
    ik_setup: IKSetups = Field(default_factory=IKSetups)
    """OpenSim IK setups whose marker weights and coordinate tasks the fits use
    (:mod:`pipeline.config.ik_setups`)."""
    up_axis: Literal["x", "y", "z", "-x", "-y", "-z"] | None = None
    """The tracks' up axis for ``kinefit fit``, replacing the store's (the fit turns the
    observations into the body plan's frame: :mod:`pipeline.fit.world_frame`)."""
    world_rotation: list[list[float]] | None = None
    """A full 3 x 3 rotation from the tracks' world to the body plan's frame (rows),
    instead of the up-axis rule."""

    @field_validator("cluster", mode="before")
    @classmethod
    def _cluster_preset(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = {"preset": value}
        if isinstance(value, Mapping) and "preset" in value:
            rest = {k: v for k, v in value.items() if k != "preset"}
            return {**load_preset(value["preset"]), **rest}
        return value

    @field_validator("body_plan")
    @classmethod
    def _body_plan_exists(cls, value: str) -> str:
        from pipeline.bodyplan.library import SHIPPED

        if value != "auto" and value not in SHIPPED and not Path(value).is_file():
            raise ValueError(
                f"no such body-plan file {value!r}; give a JSON file, 'auto' (each session's "
                "best-matching shipped plan, or a BVH file's own skeleton) or a shipped "
                "plan: " + ", ".join(SHIPPED)
            )
        return value

    @_model_validator(mode="after")
    def _auto_calibrates_itself(self) -> RunConfig:
        if self.body_plan == "auto" and self.calibration.mode != "none":
            raise ValueError(
                f"calibration.mode {self.calibration.mode!r} with body_plan 'auto': auto "
                "chooses each session's plan and calibrates a 3D session's choice to its "
                "subject itself; set calibration.mode: none, or name the body_plan"
            )
        return self

    @property
    def solver_config(self) -> SolverConfig:
        """The solver settings as the solver's own frozen dataclass."""
        return SolverConfig(**self.solver.model_dump())
