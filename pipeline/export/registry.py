"""The one table of exporters: the CLI, the run config's ``outputs.exports`` and the flows read it.

========== ======== ===================================================== ======= =========
name       suffix   writes                                                angles  needs
========== ======== ===================================================== ======= =========
csv        .csv     DOF trajectories, root pose, named angles; units row  yes     -
bvh        .bvh     skeleton (rest offsets) and motion, ZXY Euler         no      -
trc        .trc     fitted (and observed) keypoints, OpenSim markers      no      -
mot        .mot     OpenSim coordinates of a plan imported from .osim     no      -
nwb        .nwb     ndx-pose PoseEstimation + joint angles TimeSeries     yes     ``nwb`` extra
qpos       .npz     engine coordinates (MuJoCo qpos / URDF q) per frame   no      -
movement   .nc      fitted_position as a movement poses dataset           no      -
kimodo     .json    Kimodo constraints (needs a Kimodo skeleton: CLI      no      -
                    ``kinefit export kimodo``, not automatic)
========== ======== ===================================================== ======= =========

An exporter is a module function ``outputs(fit, plan, out, *, <options>) ->
list[Output]`` (see :mod:`pipeline.export.common`): it checks everything, then says
which files it would write. :func:`export` opens the fit store, runs it, and writes the
files atomically with their fingerprint record. Modules are imported when used, so an
exporter's optional dependency (pynwb) is only needed by that exporter.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import ExportError
from pipeline.export.common import (
    ExportResult,
    export_fingerprint,
    fit_plan,
    is_current,
    read_record,
    write_outputs,
)
from pipeline.store.fit import open_fit

__all__ = [
    "AUTOMATIC_EXPORTS",
    "EXPORTERS",
    "EXPORT_NAMES",
    "ExporterSpec",
    "default_output",
    "export",
    "exporter_options",
    "get_exporter",
]


@dataclass(frozen=True)
class ExporterSpec:
    """One row of the table.

    Attributes
    ----------
    name : str
        What users type (``kinefit export <name>``, ``outputs.exports``).
    module, function : str
        Where the ``outputs`` function lives.
    suffix : str
        Default file suffix.
    summary : str
        One line for help texts.
    angles : bool
        Takes the ``angles`` option (named angles in ``deg`` or ``rad``, or ``none``).
    automatic : bool
        Can run with default options (``outputs.exports``, the reprocess flow).
    format_version : int
        Bumped when the exporter's output changes, so earlier exports become stale.
    """

    name: str
    module: str
    function: str
    suffix: str
    summary: str
    angles: bool = False
    automatic: bool = True
    format_version: int = 1

    def resolve(self) -> Callable[..., Any]:
        """The ``outputs`` function (imports its module)."""
        return getattr(importlib.import_module(self.module), self.function)


_ROWS = (
    ExporterSpec(
        "csv", "pipeline.export.csv", "outputs", ".csv", "DOFs, root pose, named angles", True
    ),
    ExporterSpec("bvh", "pipeline.export.bvh", "outputs", ".bvh", "BVH skeleton and motion"),
    ExporterSpec("trc", "pipeline.export.opensim", "trc_outputs", ".trc", "OpenSim markers (.trc)"),
    ExporterSpec(
        "mot", "pipeline.export.opensim", "mot_outputs", ".mot", "OpenSim coordinates (.mot)"
    ),
    ExporterSpec(
        "nwb", "pipeline.export.nwb", "outputs", ".nwb", "NWB: ndx-pose keypoints, angles", True
    ),
    ExporterSpec("qpos", "pipeline.export.qpos", "outputs", ".npz", "engine coordinates (qpos)"),
    ExporterSpec(
        "movement", "pipeline.export.movement", "outputs", ".nc", "movement poses dataset"
    ),
    ExporterSpec(
        "kimodo",
        "pipeline.export.kimodo",
        "export_kimodo",
        ".json",
        "Kimodo constraints (kinefit export kimodo)",
        automatic=False,
    ),
)
#: name -> spec, in table order.
EXPORTERS: dict[str, ExporterSpec] = {row.name: row for row in _ROWS}
#: Every exporter's name.
EXPORT_NAMES: tuple[str, ...] = tuple(EXPORTERS)
#: The exporters ``outputs.exports`` may list (they run with default options).
AUTOMATIC_EXPORTS: tuple[str, ...] = tuple(n for n, s in EXPORTERS.items() if s.automatic)


def get_exporter(name: str, *, automatic: bool = True) -> ExporterSpec:
    """The spec of exporter ``name``.

    Raises
    ------
    ExportError
        Unknown name (the message lists the valid ones).
    """
    valid = AUTOMATIC_EXPORTS if automatic else EXPORT_NAMES
    if name not in valid:
        raise ExportError(f"unknown export format {name!r}; valid formats: {', '.join(valid)}")
    return EXPORTERS[name]


def exporter_options(spec: ExporterSpec) -> tuple[str, ...]:
    """The keyword-only options of an exporter's ``outputs`` function."""
    parameters = inspect.signature(spec.resolve()).parameters.values()
    return tuple(p.name for p in parameters if p.kind is p.KEYWORD_ONLY)


def _with_defaults(spec: ExporterSpec, options: dict[str, Any]) -> dict[str, Any]:
    """The options with every default filled in (equal settings, equal fingerprints)."""
    parameters = inspect.signature(spec.resolve()).parameters.values()
    defaults = {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}
    return {**defaults, **options}


def default_output(fit: str | Path, name: str) -> Path:
    """Where an export of a fit store goes by default: beside it, the format's suffix."""
    path = Path(fit)
    return path.with_name(f"{path.name.removesuffix('.zarr')}{get_exporter(name).suffix}")


def export(
    name: str,
    fit: str | Path,
    out: str | Path | None = None,
    *,
    overwrite: bool = False,
    skip_current: bool = False,
    **options: Any,
) -> ExportResult:
    """Run exporter ``name`` over a fit store.

    Parameters
    ----------
    name : str
        One of :data:`AUTOMATIC_EXPORTS` (``kimodo`` has its own entry point).
    fit : str or Path
        A complete fit store.
    out : str or Path, optional
        The file (default :func:`default_output`); exporters that write one file per
        individual name them ``<stem>.<individual><suffix>``.
    overwrite : bool
        Replace existing files.
    skip_current : bool
        Write nothing when the files exist with this export's fingerprint.
    **options
        The exporter's own options (:func:`exporter_options`).

    Returns
    -------
    ExportResult

    Raises
    ------
    ExportError
        Unknown exporter or option, or input the exporter cannot write (nothing is
        written).
    FileExistsError
        A file exists and neither ``overwrite`` nor a current fingerprint allows it.
    """
    spec = get_exporter(name)
    valid = exporter_options(spec)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ExportError(
            f"{name} export: unknown option(s) {', '.join(unknown)}; valid options: "
            f"{', '.join(valid) or 'none'}"
        )
    target = Path(out) if out is not None else default_output(fit, name)
    options = _with_defaults(spec, options)
    ds = open_fit(fit)
    fingerprint = export_fingerprint(name, spec.format_version, ds, options)
    if skip_current and is_current(target, fingerprint):
        record = read_record(target) or {}
        files = tuple(Path(f) for f in record.get("files", [target]))
        return ExportResult(name, files, fingerprint, skipped=True)
    try:
        outputs = spec.resolve()(ds, fit_plan(ds), target, **options)
    except ExportError as exc:
        raise ExportError(f"{fit}: {exc}") from None
    record = {
        "exporter": name,
        "format_version": spec.format_version,
        "fingerprint": fingerprint,
        "fit": str(fit),
        "fit_fingerprint": ds.attrs.get("fingerprint"),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in options.items()},
    }
    files = write_outputs(
        outputs, overwrite=overwrite or skip_current, record=record, record_path=target
    )
    return ExportResult(name, files, fingerprint)
