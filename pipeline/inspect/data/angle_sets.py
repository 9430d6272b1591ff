"""A fit's angles as scientists read them: named, in degrees, grouped by joint, with limits.

Two sources, the same result. A fit with ``joint_angle (time, individual, angle)`` (named
anatomical angles, ``angle`` coords like ``knee_l/flexion``; the exports contract) shows
those; :func:`with_named_angles` adds them to a fit that has its body plan (they are
computed when asked, :func:`pipeline.bodyplan.angles.joint_angles`, not stored). Any other
fit shows its solver coordinates ``dof_value (time, individual, dof)`` under their DOF
names (``knee_l/0``), hinge and swing DOFs as angles, slide DOFs as lengths. ``dof_std``
(or ``joint_angle_std``), when the fit has it, gives each trajectory its standard deviation
for an uncertainty band (named angles taken straight from a DOF inherit its ``dof_std``;
Euler-decomposed ones have none).

Gaps: :func:`evidence_gaps` says, per frame and angle, whether any keypoint constrained
it. An angle is in a gap where any DOF it is computed from (:func:`angle_dofs`: the DOF
itself, or every rotational DOF of an Euler-decomposed joint) is unobservable
(``dof_observable`` False, :mod:`pipeline.solve.temporal.uncertainty`): the motion model
bridges it there (``temporal="smooth"``) or the neutral prior holds it. A fit without
``dof_observable`` (fit store schema 1 and 2) falls back on its missing keypoints
(``residual`` NaN): a DOF is unobservable where no keypoint of a joint below it was
seen. :func:`gap_runs` turns a frame mask into its runs of consecutive gap frames.

Axes: the trajectories set a panel's y-axis, not their bands
(:func:`pipeline.inspect.data.bands.band_axis`). On near-singular geometry a frame's standard
deviation can reach hundreds of degrees while the trajectory moves a few; such a band is
clipped to the axis (:func:`~pipeline.inspect.data.bands.clip_band`) and the plots mark where
(never silently). Joint limits far from the trajectories (a knee's 150 deg while it moves
between 5 and 15) are left off the axis too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.bodyplan.angles import angle_entries, joint_angles
from pipeline.errors import BodyPlanError
from pipeline.inspect.data.checks import InspectError, body_plan_of, dof_kinds, length_unit

__all__ = [
    "AngleSet",
    "angle_dofs",
    "angle_set",
    "evidence_gaps",
    "gap_runs",
    "with_named_angles",
]

_ANGULAR = ("hinge", "swing", "angle")


@dataclass(frozen=True)
class AngleSet:
    """The angles of a fit, ready to plot.

    Attributes
    ----------
    variable : str
        ``"joint_angle"`` or ``"dof_value"``: where the values come from.
    dim : str
        The angle dim of that variable (``"angle"`` or ``"dof"``).
    names : tuple of str
        One per angle (``knee_l/flexion`` or ``knee_l/0``).
    units : tuple of str
        Display unit of each: ``deg`` for angles, the fit's length unit for slides.
    scale : numpy.ndarray, shape (n_angles,)
        Factor from stored values to display units (``180 / pi`` for angles in rad).
    groups : dict
        Joint name (the part before ``/``) -> indices into ``names``, in order.
    limits : dict
        Angle name -> ``(lower, upper)`` in display units (either may be infinite); a
        ball joint's swing components get their cone half-angle. Absent: unbounded.
    std_variable : str or None
        The variable holding each value's standard deviation (same dims), if any.
    """

    variable: str
    dim: str
    names: tuple[str, ...]
    units: tuple[str, ...]
    scale: np.ndarray
    groups: dict[str, list[int]]
    limits: dict[str, tuple[float, float]]
    std_variable: str | None

    def label(self, index: int) -> str:
        """``name (unit)`` of angle ``index``."""
        return f"{self.names[index]} ({self.units[index]})"

    def values(self, fit: xr.Dataset, individual: str) -> np.ndarray:
        """``(time, angle)`` display-unit values of one individual (float64)."""
        data = fit[self.variable].sel(individual=individual).transpose("time", self.dim)
        return np.asarray(data.values, dtype=float) * self.scale

    def std(self, fit: xr.Dataset, individual: str) -> np.ndarray | None:
        """``(time, angle)`` standard deviations in display units, or None without them."""
        if self.std_variable is None:
            return None
        data = fit[self.std_variable].sel(individual=individual).transpose("time", self.dim)
        return np.asarray(data.values, dtype=float) * self.scale


def _groups(names: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        out.setdefault(name.split("/")[0], []).append(i)
    return out


def _dof_limits(plan: BodyPlan | None, names: list[str], scale: np.ndarray) -> dict:
    if plan is None:
        return {}
    out: dict[str, tuple[float, float]] = {}
    index = 0
    for joint in plan.joints:
        swing = 0
        for dof in joint.dofs:
            name = plan.dof_names[index]
            lo, hi = float(plan.lower[index]), float(plan.upper[index])
            if dof.type == "swing" and joint.kind is not None and joint.kind.swing_limit:
                half = float(joint.kind.swing_limit[min(swing, 1)])
                lo, hi = -half, half
                swing += 1
            if name in names and (np.isfinite(lo) or np.isfinite(hi)):
                k = names.index(name)
                out[name] = (lo * scale[k], hi * scale[k])
            index += 1
    return out


def with_named_angles(fit: xr.Dataset, plan: BodyPlan | None = None) -> xr.Dataset:
    """The fit with ``joint_angle`` (deg) computed from its body plan, when it has neither.

    Parameters
    ----------
    fit : xarray.Dataset
        A fit with ``dof_value``.
    plan : BodyPlan, optional
        Default the fit's stored plan.

    Returns
    -------
    xarray.Dataset
        ``fit`` itself when it already has ``joint_angle``, has no ``dof_value``, or no
        plan matching its DOFs; else ``fit`` plus ``joint_angle`` (and ``joint_angle_std``
        from ``dof_std`` for the angles that are DOF coordinates; NaN for Euler angles).
    """
    if "joint_angle" in fit.data_vars or "dof_value" not in fit.data_vars:
        return fit
    plan = body_plan_of(fit, plan)
    if plan is None:
        return fit
    try:
        named = joint_angles(fit, plan, unit="deg")
    except BodyPlanError:
        return fit
    out = fit.assign(joint_angle=named)
    if "dof_std" in fit.data_vars:
        std = np.asarray(fit["dof_std"].transpose("time", "individual", "dof").values, float)
        values = np.full(named.shape, np.nan)
        for a, entry in enumerate(angle_entries(plan)):
            if entry.source == "dof":
                values[..., a] = np.degrees(std[..., entry.index])
        out = out.assign(joint_angle_std=named.copy(data=values).rename("joint_angle_std"))
    return out


def angle_set(fit: xr.Dataset, plan: BodyPlan | None = None) -> AngleSet:
    """The angles to show for a fit: ``joint_angle`` when present, else ``dof_value``.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit.
    plan : BodyPlan, optional
        For DOF kinds and limits; default the fit's stored plan.

    Returns
    -------
    AngleSet

    Raises
    ------
    InspectError
        The fit has neither ``joint_angle`` nor ``dof_value``.
    """
    if "joint_angle" in fit.data_vars:
        da = fit["joint_angle"]
        dim = next((d for d in da.dims if d not in ("time", "individual")), "angle")
        names = [str(n) for n in da[dim].values]
        unit = str(da.attrs.get("units") or "rad").lower()
        in_deg = unit.startswith("deg")
        scale = np.full(len(names), 1.0 if in_deg else 180 / np.pi)
        limits = {}
        for key in ("lower", "upper"):
            if key in da.attrs:  # optional per-angle limits (stored units)
                bounds = np.asarray(da.attrs[key], dtype=float) * scale
                for n, b in zip(names, bounds, strict=True):
                    lo, hi = limits.get(n, (-np.inf, np.inf))
                    limits[n] = (b, hi) if key == "lower" else (lo, b)
        std = "joint_angle_std" if "joint_angle_std" in fit.data_vars else None
        return AngleSet(
            "joint_angle",
            dim,
            tuple(names),
            ("deg",) * len(names),
            scale,
            _groups(names),
            limits,
            std,
        )
    if "dof_value" not in fit.data_vars:
        have = ", ".join(sorted(map(str, fit.data_vars))) or "none"
        raise InspectError(
            f"angles need 'joint_angle' or 'dof_value' (time, individual, ...); the dataset "
            f"has: {have}"
        )
    plan = body_plan_of(fit, plan)
    names = [str(n) for n in fit["dof"].values]
    kinds = dof_kinds(fit, plan)
    angular = np.array([k in _ANGULAR for k in kinds])
    scale = np.where(angular, 180 / np.pi, 1.0)
    length = length_unit(fit)
    units = tuple(
        "deg" if a else (length if k != "unknown" else "rad or length")
        for a, k in zip(angular, kinds, strict=True)
    )
    std = "dof_std" if "dof_std" in fit.data_vars else None
    return AngleSet(
        "dof_value",
        "dof",
        tuple(names),
        units,
        scale,
        _groups(names),
        _dof_limits(plan, names, scale),
        std,
    )


def angle_dofs(fit: xr.Dataset, angles: AngleSet, plan: BodyPlan | None = None) -> list:
    """Per angle, the fit's DOFs it is computed from (indices into ``fit["dof"]``).

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit with a ``dof`` coordinate.
    angles : AngleSet
        Its angles (:func:`angle_set`).
    plan : BodyPlan, optional
        Default the fit's stored plan.

    Returns
    -------
    list of numpy.ndarray of int
        A DOF value: itself; a named angle taken from a DOF: that DOF; an Euler angle:
        every rotational DOF of its joint. Without the plan, a named angle's DOFs are
        those named ``<its joint>/...``; empty when none is found.
    """
    dofs = [str(d) for d in fit["dof"].values] if "dof" in fit.coords else []
    index = {d: i for i, d in enumerate(dofs)}
    sources: dict[str, list[str]] = {}
    plan = body_plan_of(fit, plan) if angles.variable != "dof_value" else None
    if plan is not None:
        for entry in angle_entries(plan):
            if entry.source == "dof":
                sources[entry.name] = [plan.dof_names[entry.index]]
                continue
            first = int(np.searchsorted(plan.dof_joint, entry.joint))
            spec = plan.joints[entry.joint].dofs
            sources[entry.name] = [
                plan.dof_names[first + i] for i, d in enumerate(spec) if d.type != "slide"
            ]
    out = []
    for name in angles.names:
        if angles.variable == "dof_value":
            cols = [name]
        else:
            joint = name.split("/")[0]
            cols = sources.get(name) or [d for d in dofs if d.split("/")[0] == joint]
        out.append(np.array([index[c] for c in cols if c in index], dtype=int))
    return out


def _blind_from_residuals(fit: xr.Dataset, individual: str, plan: BodyPlan | None):
    """``(time, dof)``: no keypoint of a joint below the DOF's joint seen, or None."""
    plan = body_plan_of(fit, plan)
    if plan is None or "residual" not in fit.data_vars or "keypoint" not in fit.coords:
        return None
    res = fit["residual"].sel(individual=individual).transpose("time", "keypoint")
    seen = np.isfinite(np.asarray(res.values, dtype=float))
    column = {str(k): i for i, k in enumerate(fit["keypoint"].values)}
    below: list[set[int]] = [set() for _ in plan.joints]
    for j in reversed(range(plan.n_joints)):  # parents precede their children
        parent = int(plan.parent_indices[j])
        if parent >= 0:
            below[parent] |= below[j]
            if plan.joint_names[j] in column:
                below[parent].add(column[plan.joint_names[j]])
    dofs = [str(d) for d in fit["dof"].values]
    blind = np.ones((seen.shape[0], len(dofs)), dtype=bool)
    for col, name in enumerate(dofs):
        if name in plan.dof_names:
            keys = sorted(below[int(plan.dof_joint[plan.dof_names.index(name)])])
            blind[:, col] = ~seen[:, keys].any(axis=1) if keys else True
        else:
            blind[:, col] = False  # not a DOF of the plan: unknown, never shaded
    return blind


def evidence_gaps(
    fit: xr.Dataset, angles: AngleSet, individual: str, plan: BodyPlan | None = None
) -> np.ndarray | None:
    """``(time, angle)`` True where no keypoint evidence constrains an angle.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit; ``dof_observable (time, individual, dof)`` says which DOFs the
        keypoints constrain in each frame (else missing keypoints, ``residual`` NaN, and
        the plan's tree; see the module docstring).
    angles : AngleSet
        The fit's angles (:func:`angle_set`).
    individual : str
    plan : BodyPlan, optional
        Default the fit's stored plan.

    Returns
    -------
    numpy.ndarray of bool or None
        In a gap where any of the angle's DOFs (:func:`angle_dofs`) is unobservable
        (frames never fitted have no evidence either). None when the fit tells neither
        observability nor missing keypoints.
    """
    if "dof" not in fit.coords:
        return None
    if "dof_observable" in fit.data_vars:
        obs = fit["dof_observable"].sel(individual=individual).transpose("time", "dof")
        blind = ~np.asarray(obs.values, dtype=bool)
    else:
        blind = _blind_from_residuals(fit, individual, plan)
        if blind is None:
            return None
    sources = angle_dofs(fit, angles, plan)
    out = np.zeros((blind.shape[0], len(sources)), dtype=bool)
    for a, cols in enumerate(sources):
        if len(cols):
            out[:, a] = blind[:, cols].any(axis=1)
    return out


def gap_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The runs of consecutive True frames of a mask.

    Parameters
    ----------
    mask : (T,) bool array
        One angle's (or panel's) gap frames (:func:`evidence_gaps`).

    Returns
    -------
    list of (int, int)
        ``(start, stop)`` frame indices of each run, ``stop`` excluded, in order.
    """
    edges = np.flatnonzero(np.diff(np.r_[0, np.asarray(mask, dtype=np.int8), 0]))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
