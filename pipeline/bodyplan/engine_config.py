"""Configurations both ways: an imported plan's DOFs <-> its source engine's coordinates.

An importer (:mod:`pipeline.bodyplan.importers`) records in ``x-source.engine_configuration``
how each source coordinate maps onto the plan's DOFs. These functions use that record:

============ ================================================= ===========================
engine       engine configuration                              mapping
============ ================================================= ===========================
``mujoco``   ``qpos`` array ``(..., nq)`` in MuJoCo's order    hinge/slide ``dof = qpos -
                                                               qpos0``; ball quaternion <->
                                                               swing-twist; free root
                                                               ``qpos`` = root pose
``urdf``     dict URDF joint name -> ``(...)`` array           ``dof = q`` (continuous:
                                                               the angle, not cos/sin)
``opensim``  dict coordinate name -> ``(...)`` array           ``dof = slope * q +
                                                               intercept``; frozen
                                                               coordinates at their default;
                                                               dependent (coupled) ones
                                                               from the plan's couplings
``bvh``      channel array ``(..., n_channels)`` (degrees and  Euler channels <-> ball or
             the file's length unit), file column order        hinges; root channels <->
                                                               root pose
============ ================================================= ===========================

Root poses are ``root_position (..., 3)`` and ``root_orientation (..., 4)`` (w, x, y, z)
as the solver and :func:`~pipeline.kinematics.forward_kinematics` take them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from pipeline.bodyplan.functions import evaluate
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.rotations import (
    axis_angle_matrix,
    expmap,
    matrix_to_quat,
    quat_to_matrix,
    quat_to_rotvec,
    swing_twist,
)

__all__ = [
    "EnginePose",
    "coupling_values",
    "engine_of",
    "from_engine_configuration",
    "to_engine_configuration",
]

ENGINES = ("mujoco", "urdf", "opensim", "bvh")


class EnginePose(NamedTuple):
    """A plan's pose: DOF values and (for a free base) the root pose.

    Attributes
    ----------
    dof_values : (..., n_dofs) array
    root_position : (..., 3) array or None
    root_orientation : (..., 4) array or None
        ``(w, x, y, z)``.
    """

    dof_values: np.ndarray
    root_position: np.ndarray | None
    root_orientation: np.ndarray | None


def _config(plan: BodyPlan) -> Mapping[str, Any]:
    source = (plan.extras or {}).get("x-source")
    config = source.get("engine_configuration") if isinstance(source, Mapping) else None
    if not isinstance(config, Mapping) or config.get("engine") not in ENGINES:
        raise BodyPlanError(
            plan.source or "<plan>",
            "the plan records no engine configuration (x-source.engine_configuration); only "
            f"plans imported from {', '.join(ENGINES)} models have one",
        )
    return config


def engine_of(plan: BodyPlan) -> str:
    """The source engine of an imported plan: one of ``mujoco, urdf, opensim, bvh``."""
    return str(_config(plan)["engine"])


def _dof(plan: BodyPlan, name: str) -> int:
    try:
        return plan.dof_names.index(name)
    except ValueError:
        raise BodyPlanError(
            plan.source or "<plan>",
            f"engine configuration names DOF {name!r}, which the plan does not have (edited "
            "after import?)",
        ) from None


def _ball_dofs(plan: BodyPlan, node: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    i = _dof(plan, f"{node}/swing_y")
    joint = plan.joints[plan.joint_index(node)]
    b1, b2, axis = (np.asarray(d.axis, dtype=np.float64) for d in joint.dofs)
    return i, b1, b2, axis


def _ball_quat(plan: BodyPlan, node: str, q: np.ndarray) -> np.ndarray:
    i, b1, b2, axis = _ball_dofs(plan, node)
    swing = expmap(q[..., i, None] * b1 + q[..., i + 1, None] * b2)
    twist = axis_angle_matrix(np.broadcast_to(axis, q.shape[:-1] + (3,)), q[..., i + 2])
    return matrix_to_quat(swing @ twist)


def _ball_values(plan: BodyPlan, node: str, quat: np.ndarray, q: np.ndarray) -> None:
    i, b1, b2, axis = _ball_dofs(plan, node)
    swing, twist = swing_twist(np.asarray(quat, dtype=np.float64), axis)
    swing = np.where(swing[..., :1] < 0, -swing, swing)
    twist = np.where(twist[..., :1] < 0, -twist, twist)
    rv = quat_to_rotvec(swing)
    q[..., i] = rv @ b1
    q[..., i + 1] = rv @ b2
    q[..., i + 2] = 2.0 * np.arctan2(twist[..., 1:] @ axis, twist[..., 0])


def to_engine_configuration(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray | None = None,
    root_orientation: np.ndarray | None = None,
) -> np.ndarray | dict[str, np.ndarray]:
    """The source engine's configuration of a pose of an imported plan.

    Parameters
    ----------
    plan : BodyPlan
        Imported by :mod:`pipeline.bodyplan.importers` (its ``x-source`` is needed).
    dof_values : (..., n_dofs) array
    root_position, root_orientation : (..., 3) and (..., 4) arrays, optional
        Root pose of a free base; origin and identity when omitted.

    Returns
    -------
    ndarray or dict
        See the module table: MuJoCo ``qpos (..., nq)``, URDF and OpenSim dicts of
        ``(...)`` arrays, BVH channels ``(..., n_channels)``.
    """
    config = _config(plan)
    q = np.asarray(dof_values, dtype=np.float64)
    lead = q.shape[:-1]
    rp = (
        np.zeros(lead + (3,))
        if root_position is None
        else np.broadcast_to(root_position, lead + (3,))
    )
    rq = np.broadcast_to(
        np.array([1.0, 0, 0, 0]) if root_orientation is None else root_orientation, lead + (4,)
    )
    engine, entries = config["engine"], config["entries"]
    if engine in ("urdf", "opensim"):
        key = "joint" if engine == "urdf" else "coordinate"
        out: dict[str, np.ndarray] = {}
        for e in entries:
            if e.get("type") == "frozen":
                out[e[key]] = np.full(lead, float(e["value"]))
            else:
                out[e[key]] = (q[..., _dof(plan, e["dof"])] - e["offset"]) / e["scale"]
        if config.get("dependent"):
            values = coupling_values(plan, q)
            out.update({name: values[name] for name in config["dependent"]})
        return out
    if engine == "mujoco":
        qpos = np.zeros(lead + (int(config["nq"]),))
        for e in entries:
            i = e["index"]
            if e["type"] == "free":
                qpos[..., i : i + 3], qpos[..., i + 3 : i + 7] = rp, rq
            elif e["type"] == "ball":
                qpos[..., i : i + 4] = _ball_quat(plan, e["node"], q)
            else:
                qpos[..., i] = (q[..., _dof(plan, e["dof"])] - e["offset"]) / e["scale"]
        return qpos
    return _to_bvh(plan, config, q, rp, rq)


def coupling_values(plan: BodyPlan, dof_values: np.ndarray) -> dict[str, np.ndarray]:
    """The plan's dependent coordinates (couplings) at DOF values ``(..., n_dofs)``.

    Returns
    -------
    dict
        Coupling name -> ``(...)`` array, in the plan's units.
    """
    q = np.asarray(dof_values, dtype=np.float64)
    values = {name: q[..., k] for k, name in enumerate(plan.dof_names)}
    out = {}
    for c in plan.couplings:
        values[c.name] = out[c.name] = evaluate(c.function, values[c.coordinate])[0]
    return out


def _euler(rot: np.ndarray, channels: list[str]) -> np.ndarray:
    """Degrees of intrinsic rotations in ``channels`` order giving matrices ``rot``."""
    seq = "".join(c[0] for c in channels)
    flat = rot.reshape(-1, 3, 3)
    angles = Rotation.from_matrix(flat).as_euler(seq.upper(), degrees=True)
    return angles.reshape(rot.shape[:-2] + (len(channels),))


def _to_bvh(plan, config, q, rp, rq) -> np.ndarray:
    lead = q.shape[:-1]
    out = np.zeros(lead + (int(config["n_channels"]),))
    for e in config["entries"]:
        cols = {c: e["index"] + k for k, c in enumerate(e["channels"])}
        rot_ch = [c for c in e["channels"] if c.endswith("rotation")]
        if e["type"] == "root":
            add = e.get("translation", "add") == "add"
            for c in e["channels"]:
                if c.endswith("position"):
                    k = "XYZ".index(c[0])
                    out[..., cols[c]] = rp[..., k] - (e["offset"][k] if add else 0.0)
            rot = quat_to_matrix(rq)
        else:
            shift = e["offset"] if e.get("translation") == "replace" else (0.0, 0.0, 0.0)
            for c, name in zip(
                [c for c in e["channels"] if c.endswith("position")], e["slides"], strict=True
            ):
                out[..., cols[c]] = q[..., _dof(plan, name)] + shift["XYZ".index(c[0])]
            if e.get("rotation") == "euler":
                for c, name in zip(rot_ch, e["dofs"], strict=True):
                    out[..., cols[c]] = np.degrees(q[..., _dof(plan, name)])
                continue
            if e.get("rotation") != "ball":
                continue
            rot = quat_to_matrix(_ball_quat(plan, e["node"], q))
        if rot_ch:
            angles = _euler(rot, rot_ch)
            for k, c in enumerate(rot_ch):
                out[..., cols[c]] = angles[..., k]
    return out


def from_engine_configuration(
    plan: BodyPlan, configuration: np.ndarray | Mapping[str, Any]
) -> EnginePose:
    """DOF values (and root pose) of an imported plan from its engine's configuration.

    Parameters
    ----------
    plan : BodyPlan
    configuration : ndarray or mapping
        As :func:`to_engine_configuration` returns it. URDF and OpenSim coordinates that
        are missing from the mapping are taken at 0 (URDF) or skipped (OpenSim's frozen
        coordinates, which have no DOF).

    Returns
    -------
    EnginePose
        ``root_position`` / ``root_orientation`` are None for a fixed base.
    """
    config = _config(plan)
    engine, entries = config["engine"], config["entries"]
    if engine in ("urdf", "opensim"):
        key = "joint" if engine == "urdf" else "coordinate"
        given = {k: np.asarray(v, dtype=np.float64) for k, v in dict(configuration).items()}
        lead = np.shape(next(iter(given.values()))) if given else ()
        q = np.broadcast_to(plan.neutral, lead + (plan.n_dofs,)).copy()
        for e in entries:
            if e.get("type") == "frozen" or e[key] not in given:
                continue
            q[..., _dof(plan, e["dof"])] = e["scale"] * given[e[key]] + e["offset"]
        return EnginePose(q, None, None)
    arr = np.asarray(configuration, dtype=np.float64)
    lead = arr.shape[:-1]
    q = np.zeros(lead + (plan.n_dofs,))
    rp = rq = None
    if engine == "mujoco":
        for e in entries:
            i = e["index"]
            if e["type"] == "free":
                rp, rq = arr[..., i : i + 3].copy(), arr[..., i + 3 : i + 7].copy()
            elif e["type"] == "ball":
                _ball_values(plan, e["node"], arr[..., i : i + 4], q)
            else:
                q[..., _dof(plan, e["dof"])] = e["scale"] * arr[..., i] + e["offset"]
        return EnginePose(q, rp, rq)
    for e in entries:
        cols = {c: e["index"] + k for k, c in enumerate(e["channels"])}
        rot_ch = [c for c in e["channels"] if c.endswith("rotation")]
        rot = np.broadcast_to(np.eye(3), lead + (3, 3))
        for c in rot_ch:
            axis = np.zeros(lead + (3,))
            axis[..., "XYZ".index(c[0])] = 1.0
            rot = rot @ axis_angle_matrix(axis, np.radians(arr[..., cols[c]]))
        if e["type"] == "root":
            add = e.get("translation", "add") == "add"
            rp = np.array(np.broadcast_to(np.asarray(e["offset"]) if add else 0.0, lead + (3,)))
            for c in e["channels"]:
                if c.endswith("position"):
                    rp[..., "XYZ".index(c[0])] += arr[..., cols[c]]
            rq = matrix_to_quat(rot)
            continue
        shift = e["offset"] if e.get("translation") == "replace" else (0.0, 0.0, 0.0)
        for c, name in zip(
            [c for c in e["channels"] if c.endswith("position")], e["slides"], strict=True
        ):
            q[..., _dof(plan, name)] = arr[..., cols[c]] - shift["XYZ".index(c[0])]
        if e.get("rotation") == "euler":
            for c, name in zip(rot_ch, e["dofs"], strict=True):
                q[..., _dof(plan, name)] = np.radians(arr[..., cols[c]])
        elif e.get("rotation") == "ball":
            _ball_values(plan, e["node"], matrix_to_quat(rot), q)
    return EnginePose(q, rp, rq)
