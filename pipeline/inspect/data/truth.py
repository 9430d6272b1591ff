"""Fits of synthetic sessions against their known truth.

A synthetic session (:func:`pipeline.synth.synthesize`) knows its answer: the DOF values,
the root pose and the noise-free keypoints. The demo writes each session's truth beside its
raw file, as ``truth/<stem>.nc`` in the archive folder (a netCDF of
:attr:`pipeline.synth.SynthSession.truth`); :func:`open_truth` finds it from a fit (the fit
records its tracks store, the tracks store its raw file). :func:`truth_errors` and
:func:`truth_joint_errors` compare a fit with it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.errors import InspectError
from pipeline.inspect.data.checks import body_plan_of, dof_kinds
from pipeline.store import open_tracks

__all__ = ["TRUTH_FOLDER", "open_truth", "truth_candidates", "truth_errors", "truth_joint_errors"]

#: Folder, beside a synthetic session's raw file, that holds its truth (``<stem>.nc``).
TRUTH_FOLDER = "truth"


def truth_candidates(fit: xr.Dataset) -> list[Path]:
    """Where a fit's truth may be: beside its raw file, or beside its tracks folder."""
    store = fit.attrs.get("tracks_store")
    if not store:
        return []
    out = []
    session = str(fit.attrs.get("session") or Path(store).name.removesuffix(".zarr"))
    if Path(store).exists():
        try:
            source = str(open_tracks(store).attrs.get("source_file") or "")
        except (OSError, ValueError):
            source = ""
        if source:
            raw = Path(source.removeprefix("file://"))
            out.append(raw.parent / TRUTH_FOLDER / f"{raw.stem}.nc")
    out.append(Path(store).parent.parent / TRUTH_FOLDER / f"{session}.nc")
    return out


def open_truth(fit: xr.Dataset) -> xr.Dataset | None:
    """The known truth of a synthetic session, or None (not synthetic, or not recorded)."""
    for path in truth_candidates(fit):
        if path.is_file():
            with xr.open_dataset(path) as ds:
                return ds.load()
    return None


def _aligned(fit: xr.Dataset, truth: xr.Dataset) -> xr.Dataset:
    n, m = fit.sizes["time"], truth.sizes.get("time", -1)
    if n != m:
        raise InspectError(
            f"truth has {m} frames, the fit {fit.attrs.get('session') or ''} {n}; they are "
            "not the same session"
        )
    missing = [v for v in ("dof_value", "position") if v not in truth.data_vars]
    if missing:
        raise InspectError(
            f"truth lacks {', '.join(missing)} (expected pipeline.synth's SynthSession.truth)"
        )
    return truth.assign_coords(time=fit["time"].values)


def _angle_error(fit: xr.Dataset, truth: xr.Dataset, individual: str) -> tuple:
    """``(time, dof)`` errors (deg for angles, length for slides) and the angular mask."""
    dofs = [str(d) for d in fit["dof"].values]
    plan = body_plan_of(fit)
    angular = np.array([k in ("hinge", "swing") for k in dof_kinds(fit, plan)])
    got = np.asarray(fit["dof_value"].sel(individual=individual, dof=dofs).values, float)
    want = np.asarray(truth["dof_value"].sel(individual=individual, dof=dofs).values, float)
    diff = got - want
    diff[:, angular] = (diff[:, angular] + np.pi) % (2 * np.pi) - np.pi
    diff[:, angular] = np.degrees(diff[:, angular])
    return diff, angular


def truth_errors(fit: xr.Dataset, truth: xr.Dataset) -> pd.DataFrame:
    """How far a fit is from the known truth, per individual.

    Returns
    -------
    pandas.DataFrame
        Index ``individual``; columns ``keypoint_rms`` and ``keypoint_p95`` (fitted minus
        noise-free keypoint distance, length units, over frames and keypoints),
        ``angle_rms`` and ``angle_max`` (deg, hinge and swing DOFs, wrapped to +-180),
        ``root_rms`` (root position, length units).
    """
    truth = _aligned(fit, truth)
    rows = {}
    for ind in [str(i) for i in fit["individual"].values]:
        fitted = fit["fitted_position"].sel(individual=ind).transpose("time", "keypoint", "space")
        clean = truth["position"].sel(individual=ind, keypoint=fitted["keypoint"].values)
        clean = clean.transpose("time", "keypoint", "space")
        dist = np.linalg.norm(np.asarray(fitted.values, float) - clean.values, axis=-1)
        diff, angular = _angle_error(fit, truth, ind)
        ang = np.abs(diff[:, angular])
        root = np.nan
        if "root_position" in truth and "root_position" in fit:
            r = (
                fit["root_position"].sel(individual=ind).values
                - truth["root_position"].sel(individual=ind).transpose("time", "space").values
            )
            root = float(np.sqrt(np.nanmean(np.sum(r**2, axis=-1))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rows[ind] = {
                "keypoint_rms": float(np.sqrt(np.nanmean(dist**2))),
                "keypoint_p95": float(np.nanpercentile(dist, 95)),
                "angle_rms": float(np.sqrt(np.nanmean(ang**2))) if ang.size else np.nan,
                "angle_max": float(np.nanmax(ang)) if ang.size else np.nan,
                "root_rms": root,
            }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("individual")


def truth_joint_errors(fit: xr.Dataset, truth: xr.Dataset) -> pd.DataFrame:
    """RMS error of every DOF against the truth, all individuals together.

    Returns
    -------
    pandas.DataFrame
        Index ``dof``; columns ``rms`` and ``max`` (deg for angles, length units for
        slides) and ``unit``.
    """
    truth = _aligned(fit, truth)
    diffs, angular = [], None
    for ind in [str(i) for i in fit["individual"].values]:
        diff, angular = _angle_error(fit, truth, ind)
        diffs.append(diff)
    every = np.concatenate(diffs)
    unit = str(fit.attrs.get("unit") or "length units")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        table = pd.DataFrame(
            {
                "rms": np.sqrt(np.nanmean(every**2, axis=0)),
                "max": np.nanmax(np.abs(every), axis=0),
                "unit": np.where(angular, "deg", unit),
            },
            index=pd.Index([str(d) for d in fit["dof"].values], name="dof"),
        )
    return table
