"""Named anatomical angles: how a joint's rotation is reported (``joint_angle``).

A version-2 joint may declare how its rotation is reported::

    "angles": {"sequence": "xzy", "names": ["flexion", "adduction", "rotation"],
               "signs": [-1, -1, -1]}

- ``sequence``: three axis letters of the joint's **rest frame** (after ``offset_quat``),
  applied **intrinsically** (each about the axis as turned by the ones before, so the
  joint's rotation relative to its rest frame is ``R = R_a(t1) @ R_b(t2) @ R_c(t3)``).
  Tait-Bryan (three different letters, e.g. ``zxy``) or proper Euler (first equals last,
  e.g. ``yxy``); lower or upper case mean the same.
- ``names``: one name per reported angle (no ``/``), unique within the joint; the angle's
  coordinate is ``<joint>/<name>`` (``knee_l/flexion``).
- ``signs``: optional, ``+1`` or ``-1`` per angle (default all ``+1``); the reported value
  is ``sign * angle``, so a convention can flip an axis (left and right sides).

Without ``sequence``, the joint reports its rotational DOF coordinates themselves, one name
(and sign) per coordinate: a hinge knee's ``{"names": ["flexion"]}``, or a universal
wrist's two hinge values. A joint without ``angles`` reports its own
rotational DOF coordinates (hinges and a ball's swing and twist) under their DOF names
(``<joint>/<index>`` or the DOF's ``name`` with a leading ``<joint>/`` removed); slides are
lengths, not angles, and are never reported.

Values come from the fit's canonical pose: DOF-based angles are the
``dof_value`` coordinates themselves (continuous by construction, never re-wrapped), and
Euler angles are decomposed from each joint's rotation relative to its rest frame
(``joint_rotation``, recomputed in float64 from ``dof_value`` by :func:`local_rotation`)
and then **unwrapped over time** (2 pi jumps between consecutive fitted frames removed,
NaN frames skipped). They are computed when asked (:func:`joint_angles`), not stored in
the fit store: an unwrap needs the whole session (the store is written chunk by chunk on
different workers), and a changed convention then needs no refit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import xarray as xr

from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import AngleSpec, BodyPlan, Dof
from pipeline.bodyplan.validate import Where, as_list, as_object, as_str, check_keys, choices
from pipeline.kinematics.euler import euler_angles, euler_of_matrices, unwrap
from pipeline.kinematics.rotations import axis_angle_matrix, expmap

__all__ = [
    "ANGLE_KEYS",
    "SEQUENCES",
    "AngleEntry",
    "angle_entries",
    "angle_spec_to_dict",
    "angle_values",
    "euler_angles",
    "joint_angles",
    "local_rotation",
    "parse_angles",
    "unwrap",
]

#: Keys of a joint's ``angles`` object.
ANGLE_KEYS: tuple[str, ...] = ("sequence", "names", "signs")
#: Every valid Euler sequence (intrinsic, lower case): 6 Tait-Bryan and 6 proper Euler.
SEQUENCES: tuple[str, ...] = tuple(
    a + b + c for a in "xyz" for b in "xyz" for c in "xyz" if a != b and b != c
)


def _rotational(dofs: tuple[Dof, ...]) -> int:
    return sum(d.type != "slide" for d in dofs)


def parse_angles(value: Any, dofs: tuple[Dof, ...], where: Where) -> AngleSpec:
    """Read a joint's ``angles`` object (see the module docstring).

    Parameters
    ----------
    value : Any
        The decoded ``angles`` value.
    dofs : tuple of Dof
        The joint's DOFs (to check the sequence against its rotational coordinates).
    where : Where
        The joint's location, for messages.

    Returns
    -------
    AngleSpec

    Raises
    ------
    BodyPlanError
        Not an object, unknown key, unknown sequence, names or signs of the wrong length,
        repeated or empty names, a sign other than +1/-1, or a joint without rotations.
    """
    obj = as_object(value, where, "angles")
    check_keys(obj, ANGLE_KEYS, where)
    n_rot = _rotational(dofs)
    if n_rot == 0:
        raise where.error("angles", "the joint has no rotational coordinate to report")
    sequence = None
    if "sequence" in obj:
        raw = as_str(obj["sequence"], where, "angles.sequence").lower()
        if raw not in SEQUENCES:
            raise where.error(
                "angles.sequence",
                f"unknown angle sequence {obj['sequence']!r}; valid sequences (intrinsic, "
                f"rest-frame axes): {choices(SEQUENCES)}",
            )
        sequence = raw
    expected = 3 if sequence else n_rot
    if "names" not in obj:
        raise where.error("angles.names", "missing required field")
    names = tuple(
        as_str(n, where, "angles.names") for n in as_list(obj["names"], where, "angles.names")
    )
    if len(names) != expected:
        raise where.error(
            "angles.names",
            f"needs {expected} name(s), one per "
            + ("Euler angle" if sequence else "rotational coordinate of the joint")
            + f", got {len(names)}",
        )
    for name in names:
        if "/" in name:
            raise where.error("angles.names", f"{name!r}: names cannot contain '/'")
    if len(set(names)) != len(names):
        raise where.error("angles.names", f"repeated name in {list(names)}")
    signs_raw = as_list(obj.get("signs", [1] * expected), where, "angles.signs")
    if len(signs_raw) != expected or any(
        isinstance(s, bool) or s not in (1, -1) for s in signs_raw
    ):
        raise where.error(
            "angles.signs", f"needs {expected} value(s), each 1 or -1; got {signs_raw!r}"
        )
    signs = tuple(int(s) for s in signs_raw)
    return AngleSpec(sequence=sequence, names=names, signs=signs)


def angle_spec_to_dict(spec: AngleSpec) -> dict[str, Any]:
    """The JSON object of an :class:`AngleSpec` (``signs`` omitted when all +1)."""
    out: dict[str, Any] = {}
    if spec.sequence is not None:
        out["sequence"] = spec.sequence
    out["names"] = list(spec.names)
    if any(s != 1 for s in spec.signs):
        out["signs"] = list(spec.signs)
    return out


@dataclass(frozen=True)
class AngleEntry:
    """One reported angle of a plan.

    Attributes
    ----------
    name : str
        Coordinate, ``<joint>/<angle name>``.
    joint : int
        Joint index.
    source : {"dof", "euler"}
        ``dof``: the DOF coordinate ``index``; ``euler``: component ``index`` of the
        joint's Euler decomposition in ``sequence``.
    index : int
    sign : int
    sequence : str or None
    limits : tuple of 2 float
        Reported-value limits in rad (infinite where unbounded; Euler angles: unbounded).
    """

    name: str
    joint: int
    source: Literal["dof", "euler"]
    index: int
    sign: int
    sequence: str | None
    limits: tuple[float, float]


def _short(dof_name: str, joint: str) -> str:
    return dof_name.removeprefix(f"{joint}/")


def angle_entries(plan: BodyPlan) -> tuple[AngleEntry, ...]:
    """The angles a plan reports, in joint order (see the module docstring).

    Parameters
    ----------
    plan : BodyPlan

    Returns
    -------
    tuple of AngleEntry
    """
    out: list[AngleEntry] = []
    start = 0
    names = plan.dof_names
    for j, joint in enumerate(plan.joints):
        rot = [start + i for i, d in enumerate(joint.dofs) if d.type != "slide"]
        spec = joint.angles
        if spec is not None and spec.sequence is not None:
            for k, (name, sign) in enumerate(zip(spec.names, spec.signs, strict=True)):
                out.append(
                    AngleEntry(
                        f"{joint.name}/{name}",
                        j,
                        "euler",
                        k,
                        sign,
                        spec.sequence,
                        (-np.inf, np.inf),
                    )
                )
        else:
            labels = spec.names if spec is not None else [_short(names[i], joint.name) for i in rot]
            signs = spec.signs if spec is not None else (1,) * len(rot)
            for i, label, sign in zip(rot, labels, signs, strict=True):
                lo, hi = float(plan.lower[i]) * sign, float(plan.upper[i]) * sign
                out.append(
                    AngleEntry(
                        f"{joint.name}/{label}", j, "dof", i, sign, None, (min(lo, hi), max(lo, hi))
                    )
                )
        start += len(joint.dofs)
    return tuple(out)


def angle_values(
    plan: BodyPlan, dof_values: np.ndarray, entries: tuple[AngleEntry, ...] | None = None
) -> np.ndarray:
    """Named angles of poses, in radians, unwrapped along the first axis (time).

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (time, ..., n_dofs) array
        DOF values (rad / length units); NaN rows (unfitted frames) give NaN angles.
    entries : tuple of AngleEntry, optional
        Default :func:`angle_entries` of ``plan``.

    Returns
    -------
    (time, ..., n_angles) array
        ``sign * angle`` per entry (rad).
    """
    entries = angle_entries(plan) if entries is None else entries
    q = np.asarray(dof_values, dtype=np.float64)
    out = np.full(q.shape[:-1] + (len(entries),), np.nan)
    bad = ~np.isfinite(q).all(axis=-1)
    decomposed: dict[int, np.ndarray] = {}
    for k, entry in enumerate(entries):
        if entry.source == "dof":
            out[..., k] = entry.sign * q[..., entry.index]
            continue
        if entry.joint not in decomposed:
            assert entry.sequence is not None
            rot = local_rotation(plan, np.nan_to_num(q), entry.joint)
            angles = euler_of_matrices(rot, entry.sequence)
            angles[bad] = np.nan
            decomposed[entry.joint] = unwrap(angles)
        out[..., k] = entry.sign * decomposed[entry.joint][..., entry.index]
    return out


def local_rotation(plan: BodyPlan, dof_values: np.ndarray, joint: int) -> np.ndarray:
    """One joint's rotation relative to its rest frame: the product of its DOF rotations.

    The same rotation as :func:`pipeline.kinematics.joint_rotations_local` (the fit's
    ``joint_rotation``), for one joint only: hinges about their axes, a ball's swing as
    ``exp(swing_y * b1 + swing_z * b2)``, slides not rotating.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (..., n_dofs) array
    joint : int

    Returns
    -------
    (..., 3, 3) array
    """
    q = np.asarray(dof_values, dtype=np.float64)
    first = int(np.searchsorted(plan.dof_joint, joint))
    dofs = plan.joints[joint].dofs
    rot = np.broadcast_to(np.eye(3), q.shape[:-1] + (3, 3))
    i = 0
    while i < len(dofs):
        dof, col = dofs[i], first + i
        if dof.type == "hinge":
            axis = np.broadcast_to(np.asarray(dof.axis), q.shape[:-1] + (3,))
            rot = rot @ axis_angle_matrix(axis, q[..., col])
        elif dof.type == "swing":
            b1, b2 = np.asarray(dof.axis), np.asarray(dofs[i + 1].axis)
            rot = rot @ expmap(q[..., col, None] * b1 + q[..., col + 1, None] * b2)
            i += 1
        i += 1
    return rot


Unit = Literal["deg", "rad"]


def joint_angles(fit: xr.Dataset, plan: BodyPlan, *, unit: Unit = "deg") -> xr.DataArray:
    """``joint_angle (time, individual, angle)``: a fit's named anatomical angles.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit (``dof_value (time, individual, dof)``).
    plan : BodyPlan
        The plan whose conventions to use (the fitted plan, or one with the same DOFs and
        other ``angles``; :func:`pipeline.export.common.fit_plan` reads the stored one).
    unit : {"deg", "rad"}
        Unit of the values.

    Returns
    -------
    xarray.DataArray
        Named ``joint_angle``, float64, ``angle`` coords like ``knee_l/flexion``; attrs
        ``units``, per-angle ``lower`` / ``upper`` (in ``units``; infinite where unbounded),
        and ``convention`` (how each angle is defined).

    Raises
    ------
    BodyPlanError
        The plan's DOFs are not the fit's, or a bad unit.
    """
    dofs = [str(d) for d in fit["dof"].values]
    if list(plan.dof_names) != dofs:
        raise BodyPlanError(
            plan.source or "<plan>",
            f"the plan's DOFs ({len(plan.dof_names)}) are not the fit's ({len(dofs)}): "
            "pass the plan the session was fitted with",
        )
    if unit not in ("deg", "rad"):
        raise BodyPlanError(plan.source or "<plan>", f"unit {unit!r}: valid units: deg, rad")
    entries = angle_entries(plan)
    values = fit["dof_value"].transpose("time", "individual", "dof").values
    rad = angle_values(plan, values, entries)
    scale = 180.0 / math.pi if unit == "deg" else 1.0
    return xr.DataArray(
        rad * scale,
        dims=("time", "individual", "angle"),
        coords={
            "time": fit["time"].values,
            "individual": fit["individual"].values,
            "angle": np.array([e.name for e in entries], dtype=object),
        },
        name="joint_angle",
        attrs={
            "units": unit,
            "lower": [e.limits[0] * scale for e in entries],
            "upper": [e.limits[1] * scale for e in entries],
            "convention": [_convention(e, plan) for e in entries],
        },
    )


def _convention(entry: AngleEntry, plan: BodyPlan) -> str:
    sign = "-" if entry.sign < 0 else ""
    if entry.source == "dof":
        return f"{sign}dof {plan.dof_names[entry.index]}"
    assert entry.sequence is not None
    return f"{sign}intrinsic {entry.sequence} angle {entry.index + 1}, unwrapped"
