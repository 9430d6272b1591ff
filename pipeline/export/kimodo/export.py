"""Export a fit store as a Kimodo constraints file plus ``meta.json``.

:func:`export_kimodo` reads one individual's canonical pose from a fit store (only
``root_position``, ``root_orientation`` and ``joint_rotation``: local rotations are never
re-derived from positions), carries it onto a Kimodo skeleton
(:mod:`~pipeline.export.kimodo.motion`), and writes the entries chosen in
:class:`ExportConfig` (:func:`~pipeline.export.kimodo.entries.build_entries`: a ``root2d``
path, ``fullbody`` keyframes, the named hand/foot types, a generic ``end-effector``).
Clips longer than 300 frames are split into prompt segments in ``meta.json``. The file is
validated with the reader's own checks before it is written. It follows the exporters'
contract (:func:`outputs` is its call in :mod:`pipeline.export.exporter_registry`): both files
appear atomically with the fingerprint record every export has, and existing files are
kept unless ``overwrite``.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.errors import flag
from pipeline.export.common import Output, fit_plan, written_by
from pipeline.export.kimodo.constraints import KimodoWarning, parse_constraints
from pipeline.export.kimodo.entries import build_entries
from pipeline.export.kimodo.export_config import ExportConfig, FrameSpec
from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.meta import FPS, meta_dict, segment_lengths
from pipeline.export.kimodo.motion import KimodoMotion, kimodo_motion, resample_pose, unit_scale
from pipeline.export.kimodo.retarget import build_retarget
from pipeline.export.kimodo.skeleton import KimodoSkeleton, load_kimodo_skeleton
from pipeline.tracks.schema import UP_AXES

__all__ = [
    "FORMAT",
    "SUFFIXES",
    "ExportConfig",
    "ExportReport",
    "FrameSpec",
    "build_entries",
    "export_kimodo",
    "outputs",
    "sniff",
]

#: The format contract's declaration (:mod:`pipeline.formats.contract`).
FORMAT = "kimodo"
SUFFIXES = (".json",)
SUMMARY = "Kimodo constraints (kinefit export kimodo)"
AUTOMATIC = False  # needs skeleton_file and skeleton
sniff = written_by(FORMAT)
#: What :func:`outputs` writes unless told otherwise.
DEFAULT_CONFIG = ExportConfig()


@dataclass(frozen=True, eq=False)
class ExportReport:
    """What :func:`export_kimodo` wrote.

    Attributes
    ----------
    out, meta : Path
        The constraints file and its ``meta.json``.
    segments : tuple of int
        Frames per prompt segment (sum: the clip length).
    frames : dict
        Constrained frames per entry type.
    motion : KimodoMotion
        The exported motion (its ``to_kimodo`` maps fitted points into the file's frame).
    bound : (J,) array
        Retargeting bound (m) per Kimodo joint (:meth:`Retarget.bound`).
    """

    out: Path
    meta: Path
    segments: tuple[int, ...]
    frames: dict[str, int]
    motion: KimodoMotion
    bound: np.ndarray


def _pick_individual(fit, config: ExportConfig, where: str) -> str:
    names = [str(v) for v in fit["individual"].values.tolist()]
    if config.individual is None:
        if len(names) == 1:
            return names[0]
        raise KimodoError(
            f"{where}: the fit has individuals {names}; pick one ({flag('individual')})"
        )
    if config.individual not in names:
        raise KimodoError(f"{where}: no individual {config.individual!r}; individuals: {names}")
    return config.individual


def _fit_pose(fit, plan, config: ExportConfig, where: str):
    """Times (s) and the canonical pose of one individual inside the time window."""
    individual = _pick_individual(fit, config, where)
    times = np.asarray(fit["time"].values, dtype=np.float64)
    unit = fit.attrs.get("time_unit")
    if unit == "frames" or (unit is None and fit.attrs.get("fps") is None):
        if config.fps is None or not config.fps > 0:
            raise KimodoError(
                f"{where}: the fit's time axis counts frames; pass its fps ({flag('fps')})"
            )
        times = (times - times[0]) / float(config.fps)
    lo = -np.inf if config.start is None else config.start
    hi = np.inf if config.stop is None else config.stop
    keep = np.flatnonzero((times >= lo - 1e-9) & (times <= hi + 1e-9))
    if keep.size == 0:
        raise KimodoError(
            f"{where}: no frames in the window [{config.start}, {config.stop}] s; the fit "
            f"spans [{times[0]:g}, {times[-1]:g}] s"
        )
    one = fit.isel(time=slice(int(keep[0]), int(keep[-1]) + 1)).sel(individual=individual)
    one = one.sel(joint=list(plan.joint_names))
    pose = [
        np.asarray(one[name].transpose("time", *dims).values, dtype=np.float64)
        for name, dims in (
            ("root_position", ("space",)),
            ("root_orientation", ("quat",)),
            ("joint_rotation", ("joint", "quat")),
        )
    ]
    for name, value in zip(
        ("root_position", "root_orientation", "joint_rotation"), pose, strict=True
    ):
        if not np.all(np.isfinite(value)):
            raise KimodoError(f"{where}: {name} of {individual!r} has NaN values; refit")
    return times[keep], *pose


def _text_output(path: Path, text: str) -> Output:
    return Output(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _meta_path(out: Path, meta: str | os.PathLike[str] | None) -> Path:
    meta_path = Path(meta) if meta is not None else out.with_name("meta.json")
    if meta_path.resolve() == out.resolve():
        raise KimodoError(f"{out}: the constraints file and meta.json must differ")
    return meta_path


def _prepare(
    fit: xr.Dataset,
    plan: BodyPlan,
    out: Path,
    sk: KimodoSkeleton,
    config: ExportConfig,
    meta_path: Path,
    where: str,
) -> tuple[list[Output], ExportReport]:
    """The two files' outputs and the report: everything checked, nothing written."""
    retarget = build_retarget(plan, sk, config.name_map, where=where)
    _warn_untransferred(plan, retarget)
    scale = unit_scale(config.unit or fit.attrs.get("unit"), where)
    up = config.up_axis or fit.attrs.get("up_axis")
    if up not in UP_AXES:
        what = "does not record its up axis" if up is None else f"has up axis {up!r}"
        raise KimodoError(
            f"{where}: the fit {what}; pass one of {', '.join(UP_AXES)} ({flag('up_axis')})"
        )
    times, position, orientation, rotation = _fit_pose(fit, plan, config, where)
    times, position, orientation, rotation = resample_pose(
        times, position, orientation, rotation, FPS
    )
    motion = kimodo_motion(
        retarget,
        times,
        position,
        orientation,
        rotation,
        scale=scale,
        up_axis=up,
        floor=config.floor,
    )
    entries = build_entries(motion, config)
    text = "[\n" + ",\n".join(json.dumps(e, allow_nan=False) for e in entries) + "\n]\n"
    parse_constraints(json.loads(text), sk, source=str(out), n_frames=motion.n_frames)
    lengths = segment_lengths(motion.n_frames, config.max_segment_frames)
    meta_text = json.dumps(meta_dict(lengths, config.text), indent=1) + "\n"
    counts = {e["type"]: len(e["frame_indices"]) for e in entries}
    report = ExportReport(out, meta_path, tuple(lengths), counts, motion, retarget.bound(scale))
    return [_text_output(out, text), _text_output(meta_path, meta_text)], report


def outputs(
    fit: xr.Dataset,
    plan: BodyPlan,
    out: Path,
    *,
    skeleton_file: str | os.PathLike[str] | None = None,
    skeleton: str | None = None,
    config: ExportConfig = DEFAULT_CONFIG,
    meta: str | os.PathLike[str] | None = None,
    source: str | None = None,
) -> list[Output]:
    """The exporters' call (:mod:`pipeline.export.exporter_registry`): constraints and meta.json.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit store.
    plan : BodyPlan
        Its body plan.
    out : Path
        Constraints JSON.
    skeleton_file : str or PathLike
        Kimodo skeletons JSON (required).
    skeleton : str
        Target skeleton's name in it (required).
    config : ExportConfig
        What to write; default a dense root path with headings.
    meta : str or PathLike, optional
        ``meta.json``; default ``meta.json`` beside ``out``.
    source : str, optional
        The fit store's path, for messages (the registry passes it).

    Returns
    -------
    list of Output
        The constraints file, then ``meta.json``.

    Raises
    ------
    KimodoError
        A missing skeleton option, or whatever :func:`export_kimodo` refuses.
    """
    where = source or "the fit"
    if skeleton_file is None or skeleton is None:
        raise KimodoError(
            f"{where}: the kimodo export needs {flag('skeleton_file')} and {flag('skeleton')}"
        )
    sk = load_kimodo_skeleton(skeleton_file, str(skeleton))
    return _prepare(fit, plan, Path(out), sk, config, _meta_path(Path(out), meta), where)[0]


def export_kimodo(
    fit_path: str | os.PathLike[str],
    skeleton_file: str | os.PathLike[str],
    skeleton: str | KimodoSkeleton,
    out: str | os.PathLike[str],
    config: ExportConfig | None = None,
    *,
    meta: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
) -> ExportReport:
    """Write one individual of a fit store as Kimodo constraints plus ``meta.json``.

    The exporters' contract (:func:`pipeline.export.exporter_registry.write_export`): both files
    appear atomically, with the fingerprint record every export has (a hidden sidecar
    beside ``out``); this entry point also returns what was written.

    Parameters
    ----------
    fit_path : str or PathLike
        A complete fit store (:func:`pipeline.fit.fit_session`).
    skeleton_file : str or PathLike
        Kimodo skeletons JSON.
    skeleton : str or KimodoSkeleton
        Target skeleton (``somaskel30``, ``g1skel34``, ``smplx22``, ...).
    out : str or PathLike
        Constraints JSON to write.
    config : ExportConfig, optional
        What to write; default a dense root path with headings.
    meta : str or PathLike, optional
        ``meta.json`` to write; default ``meta.json`` beside ``out``.
    overwrite : bool
        Replace existing files.

    Returns
    -------
    ExportReport

    Raises
    ------
    KimodoError
        Bad skeleton file, name map, unit, up axis, window or frame choice.
    FileExistsError
        ``out`` or ``meta`` exists and ``overwrite`` is false (nothing is written).
    """
    from pipeline.export.exporter_registry import get_exporter, write_export
    from pipeline.store.fit import open_fit

    config = config or ExportConfig()
    where = str(fit_path)
    out = Path(out)
    meta_path = _meta_path(out, meta)
    if not overwrite and (out.exists() or meta_path.exists()):
        existing = [str(p) for p in (out, meta_path) if p.exists()]
        raise FileExistsError(
            f"{', '.join(existing)}: already exists; pass --overwrite (overwrite=True) to replace"
        )
    sk = skeleton if isinstance(skeleton, KimodoSkeleton) else None
    sk = sk or load_kimodo_skeleton(skeleton_file, str(skeleton))
    fit = open_fit(fit_path)
    plan = fit_plan(fit)
    files, report = _prepare(fit, plan, out, sk, config, meta_path, where)
    # the options as export("kimodo", ...) records them: equal exports, equal fingerprints
    options = {"skeleton_file": skeleton_file, "skeleton": sk.name, "config": config, "meta": meta}
    spec = get_exporter(FORMAT, automatic=False)
    write_export(spec, fit_path, fit, out, options, files, overwrite=overwrite)
    return report


def _warn_untransferred(plan, retarget) -> None:
    """Warn about plan DOFs that the Kimodo skeleton does not receive."""
    used = {int(m) for m in retarget.source if m >= 0}
    lost = [j.name for i, j in enumerate(plan.joints) if j.dofs and i not in used]
    slides = [j.name for j in plan.joints if any(d.type == "slide" for d in j.dofs)]
    if lost:
        warnings.warn(
            f"body-plan joints {lost} have DOFs but no Kimodo joint in the name map; their "
            "rotation is not transferred",
            KimodoWarning,
            stacklevel=3,
        )
    if slides:
        warnings.warn(
            f"body-plan joints {slides} slide; translations are not part of the canonical "
            "pose and are not exported",
            KimodoWarning,
            stacklevel=3,
        )
