"""OpenSim files: ``.trc`` markers of any fit, ``.mot`` coordinates of an imported model.

``.trc`` (OpenSim's ``TRCFileAdapter`` layout, tab separated): the ``PathFileType 4``
line, the ``DataRate CameraRate NumFrames NumMarkers Units OrigDataRate
OrigDataStartFrame OrigNumFrames`` header with the fit's frame rate and length unit, the
marker-name row (``Frame#``, ``Time``, one name per marker over three columns), the
``X1 Y1 Z1 ...`` row, a blank line, then one row per frame (frame numbers from 1, time in
seconds). Markers are the fitted keypoints (named after the plan's joints) and, with
``keypoints="both"`` (default) or ``"observed"``, the tracked keypoints the fit used,
named ``<joint>_observed`` (read from the fit's tracks store; ``NaN`` where not tracked).
One file per individual.

``.mot`` (OpenSim ``Storage``, version 1, ``inDegrees=yes``): ``time`` then one column
per OpenSim coordinate of a plan imported from ``.osim``
(:func:`pipeline.bodyplan.engine_config.to_engine_configuration`: ``q = (dof -
intercept) / slope``), rotational coordinates in degrees and translational ones in the
model's length unit. Dependent coordinates (``CoordinateCouplerConstraint``s) follow, at
their values from the fitted DOFs; one is in degrees when the axes it drives are hinges.
Coordinates the import froze (no DOF) are left out, so OpenSim keeps them at their
defaults as the import did. Plans not imported from
OpenSim have no coordinates to write and are refused.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.bodyplan.engine_config import engine_of, to_engine_configuration
from pipeline.errors import BodyPlanError, ExportError
from pipeline.export.common import (
    Output,
    frame_rate,
    length_unit,
    pick_individuals,
    split_by_individual,
    written_by,
)
from pipeline.export.observability import observation, observed_points
from pipeline.store.tracks import open_tracks

__all__ = ["MOT", "TRC", "mot_outputs", "observed_keypoints", "trc_outputs"]

Keypoints = Literal["fitted", "observed", "both"]


def trc_text(
    name: str, fps: float, unit: str, time: np.ndarray, markers: list[str], xyz: np.ndarray
) -> str:
    """The ``.trc`` file of markers ``xyz (time, marker, 3)``."""
    n_frames, n_markers = xyz.shape[0], len(markers)
    lines = [
        f"PathFileType\t4\t(X/Y/Z)\t{name}",
        "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\t"
        "OrigDataStartFrame\tOrigNumFrames",
        f"{fps:.10g}\t{fps:.10g}\t{n_frames}\t{n_markers}\t{unit}\t{fps:.10g}\t1\t{n_frames}",
        "Frame#\tTime\t" + "\t".join(f"{m}\t\t" for m in markers).rstrip("\t"),
        "\t\t" + "\t".join(f"X{k}\tY{k}\tZ{k}" for k in range(1, n_markers + 1)),
        "",
    ]
    table = np.column_stack([np.arange(1, n_frames + 1), time, xyz.reshape(n_frames, -1)])
    body = io.StringIO()
    np.savetxt(body, table, fmt=["%d"] + ["%.10g"] * (table.shape[1] - 1), delimiter="\t")
    # a marker missing in a frame is NaN (empty fields at the end of a row lose columns)
    return "\n".join(lines) + "\n" + body.getvalue().replace("nan", "NaN")


def _seconds(fit: xr.Dataset, fps: float) -> np.ndarray:
    time = np.asarray(fit["time"].values, dtype=np.float64)
    unit = str(fit.attrs.get("time_unit") or "seconds")
    return time / fps if unit.startswith("frame") else time


def observed_keypoints(fit: xr.Dataset, individual: str) -> tuple[list[str], np.ndarray]:
    """The tracked positions the fit used, per joint: ``(joints, (time, joint, 3))``.

    Turned into the fit's frame by its ``world_rotation`` attr (the body plan's frame,
    :mod:`pipeline.fit.world_frame`), where the fitted markers are; a 2-D fit's pixels
    are placed there by :func:`pipeline.export.observability.observed_points` (a single
    view's on the image plane, several views' triangulated).

    Raises
    ------
    ExportError
        The fit's tracks store (attrs ``tracks_store``) cannot be opened.
    """
    path = fit.attrs.get("tracks_store")
    try:
        tracks = open_tracks(str(path))
    except Exception as exc:  # noqa: BLE001 - any unreadable store is reported the same way
        raise ExportError(
            f"trc export: the fit's tracks store {path!r} cannot be opened ({exc}); "
            "export keypoints='fitted' only"
        ) from None
    pairs = [tuple(p) for p in fit.attrs.get("keypoint_map") or []]
    names = [str(k) for k in tracks["keypoint"].values]
    joints = [j for k, j in pairs if k in names]
    position = tracks["position"].sel(individual=individual)
    position = position.sel(keypoint=[k for k, _ in pairs if k in names])
    if observation(fit).get("kind") in ("image", "cameras"):  # pixels: into the fit's frame
        order = ("time", "view", "keypoint", "space") if "view" in position.dims else None
        order = order or ("time", "keypoint", "space")
        pixels = np.asarray(position.transpose(*order).values, dtype=np.float64)
        xyz = observed_points(fit, pixels)
    else:
        xyz = np.asarray(position.transpose("time", "keypoint", "space").values, np.float64)
        rotation = fit.attrs.get("world_rotation")
        if rotation is not None:  # into the fit's (the body plan's) frame, as the fitted ones
            xyz = xyz @ np.asarray(rotation, dtype=np.float64).T
    if xyz.shape[0] != fit.sizes["time"]:
        raise ExportError(
            f"trc export: the tracks store {path!r} has {xyz.shape[0]} frames, the fit "
            f"{fit.sizes['time']}; it changed after the fit"
        )
    return joints, xyz


def trc_outputs(
    fit: xr.Dataset,
    plan: BodyPlan,
    out: Path,
    *,
    individual: str | None = None,
    keypoints: Keypoints = "both",
) -> list[Output]:
    """The ``.trc`` files of a fit (one per individual).

    Parameters
    ----------
    fit : xarray.Dataset
    plan : BodyPlan
    out : Path
    individual : str, optional
    keypoints : {"both", "fitted", "observed"}
        Which markers to write (see the module docstring).

    Returns
    -------
    list of Output
    """
    if keypoints not in ("both", "fitted", "observed"):
        raise ExportError(f"trc export: keypoints {keypoints!r}; valid: both, fitted, observed")
    fps = frame_rate(fit, "trc export")
    time = _seconds(fit, fps)
    unit = length_unit(fit)
    result = []
    for name, path in split_by_individual(out, pick_individuals(fit, individual, "trc export")):
        markers: list[str] = []
        parts: list[np.ndarray] = []
        if keypoints in ("both", "fitted"):
            fitted = fit["fitted_position"].sel(individual=name)
            parts.append(np.asarray(fitted.transpose("time", "keypoint", "space").values, float))
            markers += [str(k) for k in fit["keypoint"].values]
        if keypoints in ("both", "observed"):
            joints, xyz = observed_keypoints(fit, name)
            parts.append(xyz)
            markers += [f"{j}_observed" for j in joints]
        text = trc_text(path.name, fps, unit, time, markers, np.concatenate(parts, axis=1))
        result.append(Output(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8")))
    return result


def mot_text(name: str, time: np.ndarray, columns: dict[str, np.ndarray]) -> str:
    """The ``.mot`` (Storage version 1, degrees) of coordinate columns ``(time,)`` each."""
    lines = [
        name,
        "version=1",
        f"nRows={time.size}",
        f"nColumns={len(columns) + 1}",
        "inDegrees=yes",
        "endheader",
        "\t".join(["time", *columns]),
    ]
    table = np.column_stack([time, *columns.values()])
    lines += ["\t".join(f"{v:.12g}" for v in row) for row in table]
    return "\n".join(lines) + "\n"


def _dependent_rotational(plan: BodyPlan) -> dict[str, bool]:
    """Per dependent coordinate: whether every axis it drives is a hinge (degrees)."""
    config = (plan.extras or {})["x-source"]["engine_configuration"]
    kinds: dict[str, set[str]] = {}
    for joint in plan.joints:
        for axis in joint.driven:
            kinds.setdefault(axis.coordinate, set()).add(axis.type)
    return {n: kinds.get(n, {"hinge"}) == {"hinge"} for n in config.get("dependent") or []}


def _opensim_entries(plan: BodyPlan) -> list[dict]:
    try:
        engine = engine_of(plan)
    except BodyPlanError:
        engine = None
    if engine != "opensim":
        raise ExportError(
            "mot export: the fitted plan was not imported from an OpenSim model (.osim)"
            + ("" if engine is None else f"; it came from {engine}")
            + ", so it has no OpenSim coordinates; export trc (markers), csv or bvh instead"
        )
    config = (plan.extras or {})["x-source"]["engine_configuration"]
    return [e for e in config["entries"] if e.get("type") != "frozen"]


def mot_outputs(
    fit: xr.Dataset, plan: BodyPlan, out: Path, *, individual: str | None = None
) -> list[Output]:
    """The ``.mot`` files of a fit of an OpenSim-imported plan (one per individual).

    Raises
    ------
    ExportError
        The plan was not imported from ``.osim``; unknown individual; no frame rate.
    """
    entries = _opensim_entries(plan)
    types = dict(zip(plan.dof_names, (d.type for j in plan.joints for d in j.dofs), strict=True))
    fps = frame_rate(fit, "mot export")
    time = _seconds(fit, fps)
    result = []
    for name, path in split_by_individual(out, pick_individuals(fit, individual, "mot export")):
        sel = fit.sel(individual=name)
        q = np.asarray(sel["dof_value"].transpose("time", "dof").values, dtype=np.float64)
        rp = rq = None
        if not plan.fixed_base:
            rp = np.asarray(sel["root_position"].transpose("time", "space").values, np.float64)
            rq = np.asarray(sel["root_orientation"].transpose("time", "quat").values, np.float64)
        values = to_engine_configuration(plan, q, rp, rq)
        assert isinstance(values, dict)
        columns = {}
        for e in entries:
            if e["coordinate"] in columns:  # a coordinate driving several axes: its first
                continue
            v = np.asarray(values[e["coordinate"]], dtype=np.float64)
            columns[e["coordinate"]] = np.degrees(v) if types[e["dof"]] != "slide" else v
        for dep, rotational in _dependent_rotational(plan).items():
            v = np.asarray(values[dep], dtype=np.float64)
            columns[dep] = np.degrees(v) if rotational else v
        text = mot_text(path.stem, time, columns)
        result.append(Output(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8")))
    return result


#: The two formats' declarations for the format contract (:mod:`pipeline.formats.contract`).
TRC = SimpleNamespace(
    FORMAT="trc",
    SUFFIXES=(".trc",),
    SUMMARY="OpenSim markers (.trc)",
    sniff=written_by("trc"),
    outputs=trc_outputs,
)
MOT = SimpleNamespace(
    FORMAT="mot",
    SUFFIXES=(".mot",),
    SUMMARY="OpenSim coordinates (.mot)",
    sniff=written_by("mot"),
    outputs=mot_outputs,
)
