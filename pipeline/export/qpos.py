"""Engine coordinates per frame: MuJoCo ``qpos`` (MJCF plans) or URDF joint values.

For a plan imported from MJCF the vector is MuJoCo's ``qpos`` of the source model (``nq``
values in MuJoCo's order: a free joint's position and ``w, x, y, z`` quaternion, ball
quaternions, hinge and slide values including their ``qpos0``), so ``data.qpos[:] =
row; mj_kinematics`` puts the model's bodies where the fit put the plan's joints. For a
plan imported from URDF it is the URDF joint values in the import's joint order (radians
and metres), after a free root's ``x, y, z, qw, qx, qy, qz`` when the base is free. Both
come from :func:`pipeline.bodyplan.engine_config.to_engine_configuration`.

Files by suffix: ``.npz`` (``qpos (time, nq)`` float64, ``time (time,)`` seconds,
``names (nq,)``, ``engine``, ``individual``) or ``.csv`` (``time`` then one column per
name). One file per individual. Plans with no engine mapping (not imported from MJCF or
URDF) are refused.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.bodyplan.engine_config import engine_of, to_engine_configuration
from pipeline.errors import BodyPlanError, ExportError
from pipeline.export.common import (
    Output,
    frame_rate,
    pick_individuals,
    split_by_individual,
    written_by,
)

#: The format contract's declaration (:mod:`pipeline.formats.contract`).
FORMAT = "qpos"
SUFFIXES = (".npz", ".csv")
SUMMARY = "engine coordinates (qpos)"
sniff = written_by(FORMAT)

__all__ = ["engine_coordinates", "outputs"]

_ROOT = ("x", "y", "z", "qw", "qx", "qy", "qz")


def _engine(plan: BodyPlan) -> str:
    try:
        engine = engine_of(plan)
    except BodyPlanError:
        engine = None
    if engine not in ("mujoco", "urdf"):
        raise ExportError(
            "qpos export: the fitted plan has no engine mapping"
            + ("" if engine is None else f" to MuJoCo or URDF (it came from {engine})")
            + "; only plans imported from MJCF or URDF models have a qpos "
            "(load the model file as the body plan, e.g. kinefit fit --body-plan robot.xml)"
        )
    return str(engine)


def _names(plan: BodyPlan, engine: str) -> list[str]:
    entries = (plan.extras or {})["x-source"]["engine_configuration"]["entries"]
    if engine == "urdf":
        joints = [e["joint"] for e in entries if e.get("type") != "frozen"]
        return ([f"root/{a}" for a in _ROOT] if not plan.fixed_base else []) + joints
    nq = int((plan.extras or {})["x-source"]["engine_configuration"]["nq"])
    names = [f"qpos{i}" for i in range(nq)]
    for e in entries:
        i = int(e["index"])
        label = e.get("joint") or ("root" if e["type"] == "free" else e.get("dof") or e.get("node"))
        if e["type"] == "free":
            names[i : i + 7] = [f"{label}/{a}" for a in _ROOT]
        elif e["type"] == "ball":
            names[i : i + 4] = [f"{label}/{a}" for a in ("qw", "qx", "qy", "qz")]
        else:
            names[i] = label
    return names


def engine_coordinates(
    plan: BodyPlan,
    dof_values: np.ndarray,
    root_position: np.ndarray | None = None,
    root_orientation: np.ndarray | None = None,
) -> tuple[list[str], np.ndarray]:
    """The engine coordinate vectors of poses of an MJCF- or URDF-imported plan.

    Parameters
    ----------
    plan : BodyPlan
    dof_values : (T, n_dofs) array
    root_position, root_orientation : (T, 3) and (T, 4) arrays, optional

    Returns
    -------
    names : list of str
    qpos : (T, n) array

    Raises
    ------
    ExportError
        The plan has no MuJoCo or URDF mapping.
    """
    engine = _engine(plan)
    values = to_engine_configuration(plan, dof_values, root_position, root_orientation)
    names = _names(plan, engine)
    if engine == "mujoco":
        return names, np.asarray(values, dtype=np.float64)
    assert isinstance(values, dict)
    cols = [values[n] for n in names if not n.startswith("root/")]
    if not plan.fixed_base:
        root = np.concatenate([root_position, root_orientation], axis=-1)  # type: ignore[list-item]
        cols = [*np.moveaxis(root, -1, 0), *cols]
    return names, np.stack(cols, axis=-1).astype(np.float64)


def _npz(tmp: Path, arrays: dict) -> None:
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def _csv(tmp: Path, time: np.ndarray, names: list[str], qpos: np.ndarray) -> None:
    table = pd.DataFrame(qpos, columns=names)
    table.insert(0, "time", time)
    buffer = io.StringIO()
    table.to_csv(buffer, index=False, float_format="%.17g")
    tmp.write_text(buffer.getvalue(), encoding="utf-8")


def outputs(
    fit: xr.Dataset, plan: BodyPlan, out: Path, *, individual: str | None = None
) -> list[Output]:
    """The qpos files of a fit (``.npz`` or ``.csv`` by ``out``'s suffix; one per individual).

    Raises
    ------
    ExportError
        No engine mapping, unknown suffix or individual.
    """
    engine = _engine(plan)
    if out.suffix.lower() not in SUFFIXES:
        raise ExportError(f"qpos export: {out}: suffix {out.suffix!r}; valid: .npz, .csv")
    fps = frame_rate(fit, "qpos export")
    time = np.asarray(fit["time"].values, dtype=np.float64)
    if str(fit.attrs.get("time_unit") or "").startswith("frame"):
        time = time / fps
    result = []
    for name, path in split_by_individual(out, pick_individuals(fit, individual, "qpos export")):
        sel = fit.sel(individual=name)
        q = np.asarray(sel["dof_value"].transpose("time", "dof").values, dtype=np.float64)
        rp = np.asarray(sel["root_position"].transpose("time", "space").values, np.float64)
        rq = np.asarray(sel["root_orientation"].transpose("time", "quat").values, np.float64)
        names, qpos = engine_coordinates(plan, q, rp, rq)
        if path.suffix.lower() == ".npz":
            arrays = {
                "qpos": qpos,
                "time": time,
                "names": np.array(names),
                "engine": np.array(engine),
                "individual": np.array(name),
            }
            result.append(Output(path, lambda tmp, a=arrays: _npz(tmp, a)))
        else:
            result.append(Output(path, lambda tmp, n=names, v=qpos: _csv(tmp, time, n, v)))
    return result
