"""Tables about fits: per-session summary, per-individual summary, worst frames, provenance.

All take already opened fit Datasets (lazy is fine: only the per-frame diagnostics
``rms_error``, ``max_error``, ``converged``, ``iterations``, ``limit_active`` and the
seams are read) and return pandas DataFrames or plain dicts.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.inspect.data.checks import as_dataset, attr_dict, body_plan_of
from pipeline.solve.rules import observed_only
from pipeline.store.attrs import residual_unit

__all__ = [
    "SUMMARY_COLUMNS",
    "individual_summary",
    "provenance",
    "session_summary",
    "summary_table",
    "worst_frames",
]

_PER_FRAME = {
    "rms_error": ("time", "individual"),
    "converged": ("time", "individual"),
    "limit_active": ("time", "individual", "dof"),
}
#: Columns of :func:`summary_table`, in order.
SUMMARY_COLUMNS: tuple[str, ...] = (
    "frames",
    "individuals",
    "median_rms",
    "worst_rms",
    "worst_time",
    "worst_individual",
    "non_converged_fraction",
    "limit_active_fraction",
    "max_seam_disagreement",
    "unit",
)


def _nan_stat(func, values: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN input gives NaN
        return float(func(values)) if values.size else float("nan")


def _observed_rms(fit: xr.Dataset) -> np.ndarray:
    """``rms_error``, NaN at frames with no observed keypoint (an RMS of nothing)."""
    codes = fit["stop_reason"].values if "stop_reason" in fit else None
    return observed_only(fit["rms_error"].values, codes)


def session_summary(fit: xr.Dataset) -> dict[str, Any]:
    """Summarize one fit (all individuals together).

    Parameters
    ----------
    fit : xarray.Dataset
        Needs ``rms_error``, ``converged`` and ``limit_active``; ``seam_disagreement``
        is used when present.

    Returns
    -------
    dict
        Keys :data:`SUMMARY_COLUMNS`: ``frames``; ``individuals``; ``median_rms`` and
        ``worst_rms`` (length units; over frames and individuals with an observed
        keypoint, NaN-skipping) with the
        ``worst_time`` and ``worst_individual`` of the worst; ``non_converged_fraction``
        of frame-individuals; ``limit_active_fraction`` of (frame, individual, DOF)
        entries sitting at a limit; ``max_seam_disagreement`` (rad or length units, NaN
        with a single chunk); ``unit``.
    """
    fit = as_dataset(fit, _PER_FRAME, "session_summary")
    rms = _observed_rms(fit.transpose("time", "individual", ...))
    worst = np.nan
    worst_time, worst_ind = np.nan, None
    if np.isfinite(rms).any():
        t, i = np.unravel_index(np.nanargmax(rms), rms.shape)
        worst = float(rms[t, i])
        worst_time = float(fit["time"].values[t])
        worst_ind = str(fit["individual"].values[i])
    seam = np.nan
    if "seam_disagreement" in fit:
        seam = _nan_stat(np.nanmax, np.asarray(fit["seam_disagreement"].values, dtype=float))
    return {
        "frames": int(fit.sizes["time"]),
        "individuals": int(fit.sizes["individual"]),
        "median_rms": _nan_stat(np.nanmedian, rms),
        "worst_rms": worst,
        "worst_time": worst_time,
        "worst_individual": worst_ind,
        "non_converged_fraction": float((~fit["converged"].astype(bool)).mean().values),
        "limit_active_fraction": float(fit["limit_active"].astype(float).mean().values),
        "max_seam_disagreement": seam,
        "unit": residual_unit(fit.attrs) if fit.attrs.get("unit") else "",
    }


def summary_table(fits: Mapping[str, xr.Dataset]) -> pd.DataFrame:
    """One row per session: :func:`session_summary` of each fit.

    Parameters
    ----------
    fits : mapping
        Session key -> fit Dataset (a :class:`~pipeline.inspect.FitArchive` is one).

    Returns
    -------
    pandas.DataFrame
        Index ``session`` (the keys, in order), columns :data:`SUMMARY_COLUMNS`.
    """
    rows = [session_summary(ds) for ds in fits.values()]
    table = pd.DataFrame(rows, index=pd.Index(list(fits), name="session"))
    return table.reindex(columns=list(SUMMARY_COLUMNS))


def individual_summary(fit: xr.Dataset) -> pd.DataFrame:
    """One row per individual of a fit.

    Returns
    -------
    pandas.DataFrame
        Index ``individual``; columns ``median_rms``, ``worst_rms``, ``worst_time``,
        ``non_converged_fraction``, ``limit_active_fraction``, ``mean_iterations`` and
        ``observed_fraction`` (keypoint-frames with a residual, i.e. observed).
    """
    need = {**_PER_FRAME, "iterations": ("time", "individual")}
    need["residual"] = ("time", "individual", "keypoint")
    fit = as_dataset(fit, need, "individual_summary")
    rows = {}
    for name in fit["individual"].values:
        one = fit.sel(individual=name)
        rms = _observed_rms(one)
        finite = np.isfinite(rms).any()
        iterations = np.asarray(one["iterations"].values, dtype=float)
        rows[str(name)] = {
            "median_rms": _nan_stat(np.nanmedian, rms),
            "worst_rms": float(np.nanmax(rms)) if finite else np.nan,
            "worst_time": float(one["time"].values[np.nanargmax(rms)]) if finite else np.nan,
            "non_converged_fraction": float((~one["converged"].astype(bool)).mean().values),
            "limit_active_fraction": float(one["limit_active"].astype(float).mean().values),
            "mean_iterations": _nan_stat(np.nanmean, np.where(iterations < 0, np.nan, iterations)),
            "observed_fraction": float(one["residual"].notnull().mean().values),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("individual")


def worst_frames(fit: xr.Dataset, n: int = 10) -> pd.DataFrame:
    """The ``n`` worst frame-individuals by RMS error, worst first.

    Parameters
    ----------
    fit : xarray.Dataset
        Needs ``rms_error``, ``max_error``, ``residual``, ``iterations``, ``converged``
        and ``limit_active``.
    n : int
        How many rows (fewer if the fit has fewer observed frame-individuals).

    Returns
    -------
    pandas.DataFrame
        Columns ``individual``, ``frame`` (index along time), ``time`` (coordinate
        value), ``rms_error``, ``max_error`` (length units), ``worst_keypoint`` (largest
        residual), ``iterations``, ``converged``, ``dofs_at_limit`` (count).
    """
    need = {
        **_PER_FRAME,
        "max_error": ("time", "individual"),
        "iterations": ("time", "individual"),
        "residual": ("time", "individual", "keypoint"),
    }
    fit = as_dataset(fit, need, "worst_frames")
    rms = np.asarray(fit["rms_error"].transpose("time", "individual").values, dtype=float)
    flat = np.where(np.isfinite(rms), rms, -np.inf).ravel()
    order = np.argsort(-flat, kind="stable")[: max(int(n), 0)]
    order = order[np.isfinite(flat[order])]
    frames, inds = np.unravel_index(order, rms.shape)
    # one vectorized read per variable (not one per row): a point selection of (t, i) pairs
    at = {"time": xr.DataArray(frames, dims="row"), "individual": xr.DataArray(inds, dims="row")}
    residual = np.asarray(fit["residual"].isel(at).transpose("row", "keypoint").values, float)
    picked = {v: np.asarray(fit[v].isel(at).values) for v in ("max_error", "iterations")}
    picked["converged"] = np.asarray(fit["converged"].isel(at).values)
    at_limit = np.asarray(fit["limit_active"].isel(at).transpose("row", "dof").values).sum(axis=1)
    keypoints = [str(k) for k in fit["keypoint"].values]
    times = np.asarray(fit["time"].values)
    names = [str(v) for v in fit["individual"].values]
    rows = []
    for r, (t, i) in enumerate(zip(frames.tolist(), inds.tolist(), strict=True)):
        res = residual[r]
        rows.append(
            {
                "individual": names[i],
                "frame": t,
                "time": float(times[t]),
                "rms_error": rms[t, i],
                "max_error": float(picked["max_error"][r]),
                "worst_keypoint": keypoints[int(np.nanargmax(res))]
                if np.isfinite(res).any()
                else "",
                "iterations": int(picked["iterations"][r]),
                "converged": bool(picked["converged"][r]),
                "dofs_at_limit": int(at_limit[r]),
            }
        )
    columns = [
        "individual",
        "frame",
        "time",
        "rms_error",
        "max_error",
        "worst_keypoint",
        "iterations",
        "converged",
        "dofs_at_limit",
    ]
    return pd.DataFrame(rows, columns=columns)


def provenance(fit: xr.Dataset) -> dict[str, Any]:
    """Where a fit came from, as label -> value (strings, numbers or dicts).

    Includes the body plan hash, solver config, kinefit version, input and fit
    fingerprints, the tracks store, creation time, chunking and timings; entries the
    fit's attrs lack are left out.
    """
    attrs = fit.attrs
    plan = None
    try:
        plan = body_plan_of(fit)
    except ValueError:  # an unreadable stored plan is still worth a report
        plan = None
    entries = {
        "session": attrs.get("session"),
        "tracks store": attrs.get("tracks_store"),
        "body plan": None
        if plan is None
        else (plan.name or "(unnamed)") + f": {plan.n_joints} joints, {plan.n_dofs} DOFs",
        "body plan sha256": attrs.get("body_plan_sha256"),
        "input fingerprint (sha256)": attrs.get("input_sha256"),
        "fit fingerprint": attrs.get("fingerprint"),
        "kinefit version": attrs.get("kinefit_version"),
        "created": attrs.get("created"),
        "finished": attrs.get("finished"),
        "frames per second (tracks)": attrs.get("fps"),
        "length unit": attrs.get("unit"),
        "residual unit": attrs.get("residual_unit"),
        "unobservable from the views": ", ".join(attrs.get("unobservable") or []) or None,
        "up axis": attrs.get("up_axis"),
        "chunking": (
            f"{attrs['n_chunks']} chunks of {attrs.get('chunk_frames')} frames, "
            f"{attrs.get('overlap_frames')} overlap frames"
            if "n_chunks" in attrs
            else None
        ),
        "unmapped track keypoints": ", ".join(attrs.get("unmapped_keypoints") or []) or None,
        "joints without a track": ", ".join(attrs.get("missing_joints") or []) or None,
        "solver config": attr_dict(attrs.get("solver_config")) or None,
        "timings": attr_dict(attrs.get("timings")) or None,
    }
    return {k: v for k, v in entries.items() if v is not None}
