"""movement export: ``fitted_position`` as a movement poses dataset in a netCDF file.

The dataset is what movement saves and opens itself (``xarray.open_dataset``):
``position (time, space, keypoint, individual)`` float64 in the fit's length unit and
``confidence (time, keypoint, individual)`` (NaN: fitted positions have none), coords
``time`` (seconds), ``space``, ``keypoint`` (the plan's joints), ``individual``, and attrs
``source_software`` (``kinefit <version>``), ``ds_type = "poses"``, ``fps``,
``time_unit``, ``source_file`` (the fit store), plus the session, length unit, up axis
and the fit's fingerprint. ``dims="plural"`` writes movement's older dim names
(``keypoints``, ``individuals``; movement before 0.17), the default ``"singular"`` the
current ones (movement 0.17 and kinefit's tracks contract).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.errors import ExportError
from pipeline.export.common import Output, pick_individuals, written_by
from pipeline.export.observability import unobserved_note
from pipeline.store.fit import fitted_poses

#: The format contract's declaration (:mod:`pipeline.formats.contract`).
FORMAT = "movement"
SUFFIXES = (".nc",)
SUMMARY = "movement poses dataset"
sniff = written_by(FORMAT)

__all__ = ["outputs", "poses_dataset"]

_PLURAL = {"keypoint": "keypoints", "individual": "individuals"}


def poses_dataset(
    fit: xr.Dataset, individual: str | None = None, dims: Literal["singular", "plural"] = "singular"
) -> xr.Dataset:
    """The fit's keypoints as an in-memory movement poses dataset (see the module docstring)."""
    if dims not in ("singular", "plural"):
        raise ExportError(f"movement export: dims {dims!r}; valid: singular, plural")
    names = pick_individuals(fit, individual, "movement export")
    ds = fitted_poses(fit.sel(individual=names)).load()
    ds["position"] = ds["position"].astype(np.float64)
    ds["confidence"] = ds["confidence"].astype(np.float64)
    ds = ds.assign_coords(
        {n: np.array([str(v) for v in ds[n].values]) for n in ("keypoint", "individual", "space")}
    )
    attrs = {k: v for k, v in ds.attrs.items() if v is not None}
    attrs["source_file"] = str(fit.encoding.get("source") or fit.attrs.get("tracks_store") or "")
    attrs["fit_fingerprint"] = str(fit.attrs.get("fingerprint"))
    if unobserved_note(fit):  # a 2-D fit: what its views could not measure
        attrs["unobserved"] = unobserved_note(fit)
    ds.attrs = {k: (str(v) if not isinstance(v, int | float) else v) for k, v in attrs.items()}
    ds["position"].attrs = {"units": str(fit.attrs.get("unit") or "unknown")}
    if dims == "plural":
        ds = ds.rename(_PLURAL)
    return ds


def _write(tmp: Path, ds: xr.Dataset) -> None:
    ds.to_netcdf(tmp)


def outputs(
    fit: xr.Dataset,
    plan: BodyPlan,
    out: Path,
    *,
    individual: str | None = None,
    dims: Literal["singular", "plural"] = "singular",
) -> list[Output]:
    """The netCDF file of a fit's keypoints (all individuals in one dataset).

    Raises
    ------
    ExportError
        Unknown ``dims`` or individual.
    """
    ds = poses_dataset(fit, individual, dims)
    return [Output(out, lambda tmp: _write(tmp, ds))]
