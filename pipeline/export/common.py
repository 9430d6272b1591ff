"""What every exporter shares: the fitted plan, individuals, atomic files, fingerprints.

An exporter never writes by itself. It checks its input and returns the files it would
write as :class:`Output` entries (a final path and a function that writes the whole file
at a path it is given); :func:`write_outputs` then refuses to replace existing files
unless asked, writes each one to a temporary name beside it, renames them into place and
records the export's fingerprint in a hidden sidecar file
(``.<name>.kinefit-export.json`` beside the requested output path). So bad input raises before
anything is written, and a half-written file never carries the final name.

An export's fingerprint hashes the exporter's name and format version, its options, the
fit's fingerprint and the kinefit version: :func:`is_current` is how the reprocess flow
re-exports only the sessions whose fit (or export settings) changed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan, load_body_plan
from pipeline.errors import ExportError, flag
from pipeline.provenance.fingerprint import kinefit_version
from pipeline.provenance.hashing import canonical_json, json_sha256
from pipeline.store.atomic import atomic_files, check_writable, write_text_atomic

__all__ = [
    "ExportResult",
    "Output",
    "export_fingerprint",
    "fit_plan",
    "frame_rate",
    "is_current",
    "jsonable",
    "length_unit",
    "pick_individuals",
    "read_record",
    "sidecar",
    "split_by_individual",
    "write_outputs",
    "written_by",
]

SIDECAR_SUFFIX = ".kinefit-export.json"


@dataclass(frozen=True)
class Output:
    """One file an exporter writes.

    Attributes
    ----------
    path : Path
        Final path.
    write : callable
        ``write(tmp)`` writes the complete file at ``tmp`` (a temporary name beside
        ``path``, with the same suffix).
    """

    path: Path
    write: Callable[[Path], None]


@dataclass(frozen=True)
class ExportResult:
    """What an export did.

    Attributes
    ----------
    exporter : str
    files : tuple of Path
        The files written (or found current).
    fingerprint : str
    skipped : bool
        True when the files were already current and nothing was written.
    """

    exporter: str
    files: tuple[Path, ...]
    fingerprint: str
    skipped: bool = False


def fit_plan(fit: xr.Dataset) -> BodyPlan:
    """The body plan a fit was made with (its attrs ``body_plan``), ``x-`` extras kept.

    Raises
    ------
    ExportError
        The fit stores no plan.
    """
    text = fit.attrs.get("body_plan")
    if not text:
        raise ExportError("the fit stores no body plan (attrs 'body_plan'); is it a fit store?")
    data = json.loads(text) if isinstance(text, str) else text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unobservable-DOF warnings were shown at fit time
        return load_body_plan(data, source="the fit's body plan")


def frame_rate(fit: xr.Dataset, where: str) -> float:
    """The fit's frame rate (Hz), from attrs ``fps``; ExportError naming ``where`` without."""
    fps = fit.attrs.get("fps")
    if not fps or not np.isfinite(float(fps)) or float(fps) <= 0:
        raise ExportError(
            f"{where}: the fit records no frame rate (attrs 'fps'); refit tracks with one"
        )
    return float(fps)


def length_unit(fit: xr.Dataset) -> str:
    """The fit's length unit (attrs ``unit``), ``"unknown"`` when not recorded."""
    unit = fit.attrs.get("unit")
    return str(unit) if unit else "unknown"


def pick_individuals(fit: xr.Dataset, individual: str | None, where: str) -> list[str]:
    """The individuals to export: ``[individual]`` or all of them, in store order.

    Raises
    ------
    ExportError
        ``individual`` is not in the fit (the message lists the individuals).
    """
    names = [str(v) for v in fit["individual"].values]
    if individual is None:
        return names
    if individual not in names:
        raise ExportError(f"{where}: no individual {individual!r}; individuals: {', '.join(names)}")
    return [individual]


def split_by_individual(out: Path, names: Sequence[str]) -> list[tuple[str, Path]]:
    """One file per individual: ``out`` itself for one, ``<stem>.<individual><suffix>`` else."""
    if len(names) == 1:
        return [(names[0], out)]
    return [(n, out.with_name(f"{out.stem}.{n}{out.suffix}")) for n in names]


def export_fingerprint(
    exporter: str, format_version: int, fit: xr.Dataset, options: Mapping[str, Any]
) -> str:
    """sha256 of the exporter, its format version, options, fit fingerprint, kinefit version."""
    return json_sha256(
        {
            "exporter": exporter,
            "format_version": format_version,
            "options": jsonable(options),
            "fit": fit.attrs.get("fingerprint"),
            "kinefit": kinefit_version(),
        }
    )


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: mappings, sequences, paths, dataclasses and arrays converted."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def sidecar(path: str | Path) -> Path:
    """The hidden fingerprint record of an export whose first file is ``path``."""
    path = Path(path)
    return path.with_name(f".{path.name}{SIDECAR_SUFFIX}")


def read_record(path: str | Path) -> dict[str, Any] | None:
    """The fingerprint record of an export (None when missing or unreadable)."""
    try:
        return json.loads(sidecar(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def written_by(exporter: str) -> Callable[[str | Path], bool]:
    """An exporter's ``sniff``: True when the file's fingerprint record names ``exporter``.

    What a file holds does not tell which exporter wrote it (a ``.json`` or ``.nc`` could
    come from anywhere); the sidecar record (:func:`sidecar`) does.
    """

    def sniff(path: str | Path) -> bool:
        record = read_record(path)
        return bool(record) and record.get("exporter") == exporter and Path(path).exists()

    sniff.__doc__ = f"True when ``path`` was written by the {exporter} exporter (its record)."
    return sniff


def is_current(path: str | Path, fingerprint: str) -> bool:
    """True if the export at ``path`` has ``fingerprint`` and all its files exist."""
    record = read_record(path)
    if not record or record.get("fingerprint") != fingerprint:
        return False
    return all(Path(f).exists() for f in record.get("files", [])) and bool(record.get("files"))


def write_outputs(
    outputs: Sequence[Output],
    *,
    overwrite: bool,
    record: Mapping[str, Any],
    record_path: Path | None = None,
) -> tuple[Path, ...]:
    """Write an exporter's files atomically, then its fingerprint record.

    Parameters
    ----------
    outputs : sequence of Output
        In order; the first one names the record.
    overwrite : bool
        Replace existing files; otherwise an existing one is an error and nothing is
        written.
    record : mapping
        JSON-serializable; ``files`` and ``created`` are added.
    record_path : Path, optional
        The path whose :func:`sidecar` holds the record (default the first file).

    Returns
    -------
    tuple of Path

    Raises
    ------
    FileExistsError
        A file exists and ``overwrite`` is false (nothing is written).
    """
    if not outputs:
        raise ExportError("nothing to export")
    existing = [str(o.path) for o in outputs if o.path.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{', '.join(existing)}: already exists; pass "
            f"{flag('overwrite', python='overwrite=True')} to replace it"
        )
    for folder in dict.fromkeys(o.path.parent for o in outputs):
        check_writable(folder, "the export")
    with atomic_files(*(o.path for o in outputs)) as temps:
        for output, tmp in zip(outputs, temps, strict=True):
            output.write(tmp)
    files = tuple(o.path for o in outputs)
    text = canonical_json(
        {
            **record,
            "files": [str(f) for f in files],
            "created": dt.datetime.now(dt.UTC).isoformat(),
        }
    )
    write_text_atomic(sidecar(record_path or files[0]), text)
    return files
