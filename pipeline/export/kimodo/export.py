"""Export a fit store as a Kimodo constraints file plus ``meta.json``.

:func:`export_kimodo` reads one individual's canonical pose from a fit store (only
``root_position``, ``root_orientation`` and ``joint_rotation``: local rotations are never
re-derived from positions), carries it onto a Kimodo skeleton
(:mod:`~pipeline.export.kimodo.motion`), and writes the entries chosen in
:class:`ExportConfig`: a ``root2d`` path (dense or waypoints, optionally with
``global_root_heading``), ``fullbody`` keyframes, the four named hand/foot types and a
generic ``end-effector``. Keyframe entries carry rotation vectors for all ``J`` joints in
skeleton order, the root position and the smoothed root at their frames (the same values
as the ``root2d`` path, so no two entries disagree). Clips longer than 300 frames are
split into prompt segments in ``meta.json``. The file is validated with the reader's own
checks before it is written; both files appear atomically, and existing files are kept
unless ``overwrite``.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan import load_body_plan
from pipeline.export.kimodo.config import ExportConfig, FrameSpec
from pipeline.export.kimodo.constraints import KimodoWarning, parse_constraints
from pipeline.export.kimodo.errors import KimodoError
from pipeline.export.kimodo.meta import FPS, meta_dict, segment_lengths
from pipeline.export.kimodo.motion import KimodoMotion, kimodo_motion, resample_pose, unit_scale
from pipeline.export.kimodo.retarget import build_retarget
from pipeline.export.kimodo.skeleton import KimodoSkeleton, load_kimodo_skeleton
from pipeline.export.kimodo.smooth import smooth_root_2d
from pipeline.kinematics.rotations import matrix_to_quat, quat_to_rotvec
from pipeline.store.atomic import atomic_files
from pipeline.tracks.schema import UP_AXES

__all__ = ["ExportConfig", "ExportReport", "FrameSpec", "build_entries", "export_kimodo"]

#: Kimodo works best with fewer keyframes than this per constraint type.
SPARSE_LIMIT = 20
_NAMED = {
    "left-hand": "left_hand",
    "right-hand": "right_hand",
    "left-foot": "left_foot",
    "right-foot": "right_foot",
}


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


def _f32(a: np.ndarray) -> list[Any]:
    return np.asarray(a, dtype=np.float32).tolist()


def _keyframe(kind: str, frames: np.ndarray, motion: KimodoMotion, smooth: np.ndarray) -> dict:
    rotvec = quat_to_rotvec(matrix_to_quat(motion.local_rot[frames]))
    return {
        "type": kind,
        "frame_indices": [int(f) for f in frames],
        "local_joints_rot": _f32(rotvec),
        "root_positions": _f32(motion.root_positions[frames]),
        "smooth_root_2d": _f32(smooth[frames]),
    }


def build_entries(motion: KimodoMotion, config: ExportConfig) -> list[dict[str, Any]]:
    """The constraint entries ``config`` asks for, as JSON-ready dicts.

    Parameters
    ----------
    motion : KimodoMotion
    config : ExportConfig

    Returns
    -------
    list of dict
        ``root2d`` first, then ``fullbody``, the named hand/foot types and
        ``end-effector``; float values rounded to float32 as Kimodo's saver does.
    """
    n = motion.n_frames
    smooth = smooth_root_2d(motion.root_positions[:, [0, 2]])
    entries: list[dict[str, Any]] = []
    if config.root2d != "off":
        frames = np.arange(n)
        if config.root2d == "waypoints":
            frames = np.unique(np.append(np.arange(0, n, config.root2d_every), n - 1))
        entry: dict[str, Any] = {
            "type": "root2d",
            "frame_indices": [int(f) for f in frames],
            "smooth_root_2d": _f32(smooth[frames]),
        }
        if config.root2d_heading:
            theta = motion.heading[frames]
            entry["global_root_heading"] = _f32(np.stack([np.cos(theta), np.sin(theta)], -1))
        entries.append(entry)
    specs = [("fullbody", config.fullbody)]
    specs += [(kind, getattr(config, attr)) for kind, attr in _NAMED.items()]
    specs.append(("end-effector", config.end_effector))
    for kind, spec in specs:
        if not spec:
            continue
        frames = spec.resolve(n, kind)
        if frames.size >= SPARSE_LIMIT:
            warnings.warn(
                f"{kind}: {frames.size} keyframes; Kimodo works best with fewer than "
                f"{SPARSE_LIMIT} per constraint type",
                KimodoWarning,
                stacklevel=2,
            )
        entry = _keyframe(kind, frames, motion, smooth)
        if kind == "end-effector":
            entry["joint_names"] = list(config.end_effector_joints)
        entries.append(entry)
    if not entries:
        raise KimodoError(
            "nothing to export: choose root2d and/or keyframes (fullbody, left-hand, "
            "right-hand, left-foot, right-foot, end-effector)"
        )
    return entries


def _pick_individual(fit, config: ExportConfig, where: str) -> str:
    names = [str(v) for v in fit["individual"].values.tolist()]
    if config.individual is None:
        if len(names) == 1:
            return names[0]
        raise KimodoError(f"{where}: the fit has individuals {names}; pick one (--individual)")
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
            raise KimodoError(f"{where}: the fit's time axis counts frames; pass its fps (--fps)")
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


def _write(paths: dict[Path, str], overwrite: bool) -> None:
    existing = [str(p) for p in paths if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{', '.join(existing)}: already exists; pass --overwrite (overwrite=True) to replace"
        )
    with atomic_files(*paths) as temps:
        for tmp, text in zip(temps, paths.values(), strict=True):
            tmp.write_text(text, encoding="utf-8")


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
    from pipeline.store.fit import open_fit

    config = config or ExportConfig()
    where = str(fit_path)
    out = Path(out)
    meta_path = Path(meta) if meta is not None else out.with_name("meta.json")
    if meta_path.resolve() == out.resolve():
        raise KimodoError(f"{out}: the constraints file and meta.json must differ")
    if not overwrite and (out.exists() or meta_path.exists()):
        existing = [str(p) for p in (out, meta_path) if p.exists()]
        raise FileExistsError(
            f"{', '.join(existing)}: already exists; pass --overwrite (overwrite=True) to replace"
        )
    sk = skeleton if isinstance(skeleton, KimodoSkeleton) else None
    sk = sk or load_kimodo_skeleton(skeleton_file, str(skeleton))
    fit = open_fit(fit_path)
    plan = load_body_plan(json.loads(fit.attrs["body_plan"]), source=f"{where} (body_plan)")
    retarget = build_retarget(plan, sk, config.name_map, where=where)
    _warn_untransferred(plan, retarget)
    scale = unit_scale(config.unit or fit.attrs.get("unit"), where)
    up = config.up_axis or fit.attrs.get("up_axis")
    if up not in UP_AXES:
        what = "does not record its up axis" if up is None else f"has up axis {up!r}"
        raise KimodoError(f"{where}: the fit {what}; pass one of {', '.join(UP_AXES)} (--up-axis)")
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
    _write({out: text, meta_path: meta_text}, overwrite)
    counts = {e["type"]: len(e["frame_indices"]) for e in entries}
    return ExportReport(out, meta_path, tuple(lengths), counts, motion, retarget.bound(scale))


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
