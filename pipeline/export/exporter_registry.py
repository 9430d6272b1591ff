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
kimodo     .json    Kimodo constraints and meta.json (needs options       no      -
                    ``skeleton_file``, ``skeleton``: not automatic)
========== ======== ===================================================== ======= =========

Each exporter follows the format contract (:mod:`pipeline.formats.contract`; the
registry is :data:`REGISTRY`): its module (or an object in one, for the two OpenSim
formats) declares ``FORMAT``, ``SUFFIXES`` (the first is the default), ``SUMMARY`` (one
line for help texts), ``sniff`` (:func:`~pipeline.export.common.written_by`: the file's
fingerprint record names the exporter), optionally ``AUTOMATIC = False`` (it needs
options, so ``outputs.exports`` cannot list it) and ``FORMAT_VERSION`` (bumped when its
output changes, so earlier exports become stale), and the call ``outputs(fit, plan, out,
*, <options>) -> list[Output]`` (see :mod:`pipeline.export.common`): it checks
everything, then says which files it would write. :func:`export` refuses an option the
call does not take, opens the fit store, runs it, and writes the files atomically with
their fingerprint record (:func:`write_export`). A call that takes ``source`` gets the fit
store's path for its messages; other exporters' errors are prefixed with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import ExportError
from pipeline.export.common import (
    ExportResult,
    Output,
    export_fingerprint,
    fit_plan,
    is_current,
    jsonable,
    read_record,
    write_outputs,
)
from pipeline.export.observability import warn_unobserved
from pipeline.formats.contract import Format, FormatRegistry, Wording
from pipeline.store.fit import open_fit

__all__ = [
    "AUTOMATIC_EXPORTS",
    "EXPORTERS",
    "EXPORTER_MODULES",
    "EXPORT_NAMES",
    "REGISTRY",
    "ExporterSpec",
    "default_output",
    "export",
    "exporter_options",
    "get_exporter",
    "write_export",
]

#: The exporters' declarations, in table order.
EXPORTER_MODULES: tuple[str, ...] = (
    "pipeline.export.csv",
    "pipeline.export.bvh",
    "pipeline.export.opensim:TRC",
    "pipeline.export.opensim:MOT",
    "pipeline.export.nwb",
    "pipeline.export.qpos",
    "pipeline.export.movement",
    "pipeline.export.kimodo.export",
)
#: The exporters' registry.
REGISTRY = FormatRegistry(
    "export",
    EXPORTER_MODULES,
    call="outputs",
    error=lambda where, reason: ExportError(f"{where}: {reason}" if where else reason),
    wording=Wording(
        unknown_format="unknown export format {name!r}; valid formats: {names}",
        unknown_option="{name} export: unknown option(s) {listed}; valid options: {valid}",
    ),
    hidden=("source",),
)


@dataclass(frozen=True)
class ExporterSpec:
    """One exporter, as its declaration gives it.

    Attributes
    ----------
    name : str
        What users type (``kinefit export <name>``, ``outputs.exports``).
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
    format : Format
        Its entry in :data:`REGISTRY`.
    """

    name: str
    suffix: str
    summary: str
    angles: bool
    automatic: bool
    format_version: int
    format: Format

    def resolve(self) -> Callable[..., Any]:
        """The ``outputs`` function."""
        return self.format.call


def _spec(fmt: Format) -> ExporterSpec:
    declared = fmt.declaration
    return ExporterSpec(
        name=fmt.name,
        suffix=fmt.suffixes[0],
        summary=declared.SUMMARY,
        angles="angles" in REGISTRY.options(fmt),
        automatic=getattr(declared, "AUTOMATIC", True),
        format_version=getattr(declared, "FORMAT_VERSION", 1),
        format=fmt,
    )


#: name -> spec, in table order.
EXPORTERS: dict[str, ExporterSpec] = {n: _spec(f) for n, f in REGISTRY.formats().items()}
#: Every exporter's name.
EXPORT_NAMES: tuple[str, ...] = tuple(EXPORTERS)
#: The exporters ``outputs.exports`` may list (they run with default options).
AUTOMATIC_EXPORTS: tuple[str, ...] = tuple(n for n, s in EXPORTERS.items() if s.automatic)


def get_exporter(name: str, *, automatic: bool = True) -> ExporterSpec:
    """The spec of exporter ``name``.

    Parameters
    ----------
    name : str
    automatic : bool
        Only the exporters that run with default options (:data:`AUTOMATIC_EXPORTS`).

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
    """The options of an exporter's ``outputs`` function (its keyword-only parameters)."""
    return REGISTRY.options(spec.format)


def default_output(fit: str | Path, name: str) -> Path:
    """Where an export of a fit store goes by default: beside it, the format's suffix."""
    path = Path(fit)
    suffix = get_exporter(name, automatic=False).suffix
    return path.with_name(f"{path.name.removesuffix('.zarr')}{suffix}")


def write_export(
    spec: ExporterSpec,
    fit: str | Path,
    ds: Any,
    target: Path,
    options: dict[str, Any],
    outputs: list[Output],
    *,
    overwrite: bool,
) -> ExportResult:
    """Write an exporter's files atomically with the fingerprint record every export has.

    Parameters
    ----------
    spec : ExporterSpec
    fit : str or Path
        The fit store (recorded).
    ds : xarray.Dataset
        The opened fit store (its fingerprint is recorded).
    target : Path
        The requested output; its sidecar holds the record.
    options : dict
        The exporter's options, every default filled in (recorded and fingerprinted).
    outputs : list of Output
        What the exporter would write.
    overwrite : bool
        Replace existing files.
    """
    fingerprint = export_fingerprint(spec.name, spec.format_version, ds, options)
    record = {
        "exporter": spec.name,
        "format_version": spec.format_version,
        "fingerprint": fingerprint,
        "fit": str(fit),
        "fit_fingerprint": ds.attrs.get("fingerprint"),
        "options": jsonable(options),
    }
    files = write_outputs(outputs, overwrite=overwrite, record=record, record_path=target)
    return ExportResult(spec.name, files, fingerprint)


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
        One of :data:`EXPORT_NAMES` (``kimodo`` needs its ``skeleton_file`` and
        ``skeleton`` options; :func:`pipeline.export.kimodo.export_kimodo` also reports
        what it wrote).
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
    spec = get_exporter(name, automatic=False)
    options = REGISTRY.check_options(spec.format, options)
    target = Path(out) if out is not None else default_output(fit, name)
    suffixes = spec.format.suffixes
    if target.is_dir() or target.suffix.lower() not in suffixes:
        what = "is a folder" if target.is_dir() else f"does not end in {' or '.join(suffixes)}"
        raise ExportError(
            f"{target}: {what}; a {name} export is a file ending in {' or '.join(suffixes)}"
        )
    options = {**spec.format.defaults(), **options}
    takes_source = "source" in options
    options.pop("source", None)
    ds = open_fit(fit)
    fingerprint = export_fingerprint(name, spec.format_version, ds, options)
    if skip_current and is_current(target, fingerprint):
        record = read_record(target) or {}
        files = tuple(Path(f) for f in record.get("files", [target]))
        return ExportResult(name, files, fingerprint, skipped=True)
    call = spec.resolve()
    if takes_source:
        outputs = call(ds, fit_plan(ds), target, source=str(fit), **options)
    else:
        try:
            outputs = call(ds, fit_plan(ds), target, **options)
        except ExportError as exc:
            raise ExportError(f"{fit}: {exc}") from None
    warn_unobserved(ds, f"{fit}: {name} export")
    return write_export(
        spec, fit, ds, target, options, outputs, overwrite=overwrite or skip_current
    )
