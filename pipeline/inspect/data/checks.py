"""Checks shared by the inspection helpers: required variables, selections, the body plan.

Every helper states the variables (and their dims) it needs; :func:`as_dataset` checks
them all at once and raises one :class:`InspectError` naming what is missing.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan, load_body_plan
from pipeline.errors import InspectError

#: Where a fit dataset comes from, quoted in error messages.
HOW_TO_OPEN = "open a fit store with pipeline.inspect.open_fit or pipeline.inspect.open_archive"


def as_dataset(
    data: xr.Dataset | xr.DataArray,
    required: Mapping[str, Sequence[str]],
    func: str,
) -> xr.Dataset:
    """Return ``data`` as a Dataset after checking it holds the ``required`` variables.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        A fit (from :func:`~pipeline.store.fit.open_fit`), a selection of it, or one
        named variable of it.
    required : mapping
        Variable name -> dims it must have (in any order).
    func : str
        The helper's name, for the message.

    Returns
    -------
    xarray.Dataset

    Raises
    ------
    InspectError
        One message listing every missing variable and every missing dim.
    TypeError
        ``data`` is neither a Dataset nor a DataArray.
    """
    names = ", ".join(repr(n) for n in required)
    if isinstance(data, xr.DataArray):
        if data.name is None:
            raise InspectError(
                f"{func}: got an unnamed DataArray; pass the fit Dataset or a DataArray "
                f"named {names}"
            )
        data = data.to_dataset()
    elif not isinstance(data, xr.Dataset):
        raise TypeError(
            f"{func}: expected an xarray Dataset or DataArray, got {type(data).__name__}"
        )
    missing = [n for n in required if n not in data.data_vars]
    problems = []
    if missing:
        have = ", ".join(sorted(map(str, data.data_vars))) or "none"
        problems.append(
            f"missing variable(s) {', '.join(repr(n) for n in missing)} (the dataset has: {have})"
        )
    for name, dims in required.items():
        if name in data.data_vars:
            lacking = [d for d in dims if d not in data[name].dims]
            if lacking:
                problems.append(
                    f"variable {name!r} lacks dim(s) {', '.join(map(repr, lacking))} "
                    f"(it has {data[name].dims}; expected {tuple(dims)})"
                )
    if problems:
        raise InspectError(f"{func} needs {names}: {'; '.join(problems)}; {HOW_TO_OPEN}")
    return data


def pick_individuals(ds: xr.Dataset, individual: str | Sequence[str] | None) -> list[str]:
    """Return the individuals to show: all of them, one, or several (validated).

    Raises
    ------
    InspectError
        An unknown individual (the message lists the valid ones).
    """
    valid = [str(v) for v in ds["individual"].values]
    if individual is None:
        return valid
    wanted = [individual] if isinstance(individual, str) else [str(i) for i in individual]
    unknown = [i for i in wanted if i not in valid]
    if unknown or not wanted:
        raise InspectError(
            f"unknown individual(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"valid individuals: {', '.join(valid)}"
        )
    return wanted


def pick_time(ds: xr.Dataset, time: slice | tuple[float, float] | None) -> xr.Dataset:
    """Restrict ``ds`` to a time range (coordinate values, inclusive), or keep it whole.

    Raises
    ------
    InspectError
        The range selects no frame (the message gives the session's time span).
    """
    if time is None:
        return ds
    window = time if isinstance(time, slice) else slice(*time)
    out = ds.sel(time=window)
    if out.sizes["time"] == 0:
        t = ds["time"].values
        span = f"{t[0]:g} to {t[-1]:g}" if t.size else "empty"
        raise InspectError(
            f"time range {window.start!r} to {window.stop!r} selects no frame; the fit spans {span}"
        )
    return out


def body_plan_of(ds: xr.Dataset, plan: BodyPlan | None = None) -> BodyPlan | None:
    """The body plan: ``plan`` if given, else the one stored in the fit's attrs, else None."""
    if plan is not None:
        return plan
    text = ds.attrs.get("body_plan")
    if not text:
        return None
    data = json.loads(text) if isinstance(text, str) else text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unobservable-DOF warnings were shown at fit time
        return load_body_plan(data, source="fit attrs 'body_plan'")


def dof_kinds(ds: xr.Dataset, plan: BodyPlan | None) -> list[str]:
    """Per ``dof`` coordinate: ``hinge``, ``swing`` or ``slide`` (``unknown`` without a plan)."""
    names = [str(d) for d in ds["dof"].values]
    if plan is None:
        return ["unknown"] * len(names)
    types = dict(zip(plan.dof_names, (d.type for j in plan.joints for d in j.dofs), strict=True))
    return [types.get(n, "unknown") for n in names]


def time_unit(ds: xr.Dataset) -> str:
    """Unit of the time coordinate: ``s`` or ``frames``."""
    unit = str(ds.attrs.get("time_unit") or "")
    return "s" if unit.startswith("s") or (not unit and ds.attrs.get("fps")) else "frames"


def length_unit(ds: xr.Dataset) -> str:
    """The fit's length unit (``unit`` attr), or ``length units``."""
    return str(ds.attrs.get("unit") or "length units")


def frame_index(ds: xr.Dataset, time: float | None, frame: int | None) -> int:
    """Index along ``time`` of a time value (nearest) or a frame index (validated)."""
    n = ds.sizes["time"]
    if time is not None and frame is not None:
        raise InspectError("pass either time= or frame=, not both")
    if frame is not None:
        if not -n <= frame < n:
            raise InspectError(f"frame {frame} is out of range; the fit has {n} frames")
        return int(frame) % n
    t = np.asarray(ds["time"].values, dtype=float)
    return int(np.argmin(np.abs(t - float(time)))) if time is not None else 0


def attr_dict(value: Any) -> dict[str, Any]:
    """An attrs entry that holds a mapping (possibly as JSON text) as a dict."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            out = json.loads(value)
        except json.JSONDecodeError:
            return {}
        return out if isinstance(out, dict) else {}
    return {}


def joint_dofs(ds: xr.Dataset, plan: BodyPlan | None = None) -> dict[str, list[str]]:
    """Each joint with DOFs -> its DOF names, in tree order.

    Parameters
    ----------
    ds : xarray.Dataset
        A fit (its ``dof`` coordinate; its stored body plan unless ``plan`` is given).
    plan : BodyPlan, optional

    Returns
    -------
    dict
        From the body plan; without one, from DOF names of the form ``<joint>/<...>``.
    """
    plan = body_plan_of(ds, plan)
    names = [str(d) for d in ds["dof"].values]
    out: dict[str, list[str]] = {}
    if plan is not None:
        for dof, j in zip(plan.dof_names, plan.dof_joint, strict=True):
            if dof in names:
                out.setdefault(plan.joints[j].name, []).append(dof)
        return out
    for dof in names:
        out.setdefault(dof.split("/")[0], []).append(dof)
    return out
