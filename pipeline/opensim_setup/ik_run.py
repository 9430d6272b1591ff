"""Run an OpenSim ``InverseKinematicsTool`` setup with kinefit's solver.

:func:`run_ik` imports the setup's model, reads its ``.trc`` (the frames whose times fall
in ``time_range``, lengths converted to metres), fits every frame with OpenSim's objective
(the marker tasks' weights on the squared marker distances plus the coordinate tasks'
``weight * (q - target)^2``, no neutral prior) to a tight tolerance, and writes what
OpenSim writes: the ``output_motion_file`` (``.mot``: every coordinate of the model in
OpenSim's order, dependent ones included, rotational ones in degrees, translational ones
in metres, the ``.trc``'s times) and ``<name>_ik_marker_errors.sto`` in the results
directory (``total_squared_error``, ``marker_error_RMS``, ``marker_error_max`` in metres
over the markers observed in the frame, unweighted, as OpenSim reports them).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.bodyplan.engine_config import to_engine_configuration
from pipeline.bodyplan.load_errors import UnobservableDofWarning, warn_unobservable
from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ConfigError
from pipeline.export.opensim import mot_text
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.opensim_setup.ik_setup import IKSetup, read_ik_setup
from pipeline.solve import CoordinateTasks, SolverConfig, solve_sequence
from pipeline.store.atomic import atomic_files
from pipeline.tracks.opensim_storage import read_storage
from pipeline.tracks.readers import trc
from pipeline.tracks.units import unit_factor

__all__ = ["IKProblem", "IKRun", "ik_problem", "ik_solver_config", "run_ik"]

#: Time slack (s) when selecting ``.trc`` frames inside ``time_range``.
TIME_SLACK = 1e-9


def ik_solver_config(accuracy: float) -> SolverConfig:
    """OpenSim's objective, converged at least as far as OpenSim's tool converges it.

    No neutral prior (OpenSim has none), absolute units (metres), frames stopped when the
    distance still left to the optimum is estimated below ``accuracy`` (m and rad;
    ``tolerance_on="distance"``), no early stop on a small relative gain, and one
    sequence warm-started frame after frame from the first (``lanes=1``), as OpenSim's
    tool runs, each frame from a constant-velocity prediction of the two before it:
    lanes would start segments cold, and on Pose2Sim's full-body model cold starts land
    arm rotations in other minima (arm_rot_l 127 deg RMS off Pose2Sim's published angles
    with the default lanes, where OpenSim's own IK is 8 off them; with one lane every
    coordinate is within 3.2 deg RMS of OpenSim's IK on the same files).

    Notes
    -----
    Marker residuals of centimetres make Gauss-Newton converge linearly (about tenfold per
    step on Gait2392's walk), so a step below ``accuracy`` leaves about a tenth of it to
    go, and the step rule over-converges. On subject01 at OpenSim's 1e-5 every frame ends
    within 2e-5 (rad, m) of a fit run to 1e-12 (``tests/unit/solve/test_distance_rule.py``)
    with 4.6 iterations per frame, where stopping on the step took 5.8 from the previous
    frame's solution; OpenSim's own tool ends up to 0.12 deg from that optimum
    (2026-12-07, ``benchmarks/opensim_ik.py``).
    """
    tol = float(accuracy)
    return SolverConfig(
        neutral_weight=0.0,
        length_scale=1.0,
        position_tolerance=tol,
        angle_tolerance=tol,
        tolerance_on="distance",
        warm_start="velocity",
        cost_tolerance=0.0,
        n_iterations=200,
        uncertainty=False,
        lanes=1,
    )


@dataclass(frozen=True)
class IKProblem:
    """What :func:`run_ik` fits: a setup read, its model imported, its frames selected.

    Attributes
    ----------
    setup : IKSetup
    plan : BodyPlan
        The setup's model, imported.
    time : (T,) array
        Seconds, the ``.trc``'s frames in ``time_range``.
    coordinates : list of (str, bool, float)
        Every coordinate of the model in OpenSim's order: name, rotational, default.
    targets : (T, J, 3) array
        The marker tasks' markers in metres (NaN: not a task or not observed).
    keypoint_weights : (J,) array
        The marker tasks' weights.
    tasks : CoordinateTasks
    config : SolverConfig
        :func:`ik_solver_config` of the setup's ``accuracy``.
    """

    setup: IKSetup
    plan: BodyPlan
    time: np.ndarray
    coordinates: list[tuple[str, bool, float]]
    targets: np.ndarray
    keypoint_weights: np.ndarray
    tasks: CoordinateTasks
    config: SolverConfig


@dataclass(frozen=True)
class IKRun:
    """What :func:`run_ik` fitted and wrote.

    Attributes
    ----------
    time : (T,) array
        Seconds, the ``.trc``'s.
    coordinates : dict of str to (T,) array
        Every coordinate in OpenSim's order, as written (degrees / metres).
    marker_errors : (T, 3) array
        ``total_squared_error`` (m^2), ``marker_error_RMS``, ``marker_error_max`` (m).
    weighted_error : (T,) array
        ``sum_i weight_i |marker_i - fk_i|^2`` (m^2), the marker part of the objective.
    iterations : (T,) array
    motion_file, errors_file : Path
    """

    time: np.ndarray
    coordinates: dict[str, np.ndarray]
    marker_errors: np.ndarray
    weighted_error: np.ndarray
    iterations: np.ndarray
    motion_file: Path
    errors_file: Path


def _coordinates(setup: IKSetup) -> list[tuple[str, bool, float]]:
    """``(name, rotational, default value)`` of every coordinate in OpenSim's order.

    Rotational: OpenSim's motion type ``Rotational`` (1); only those are written in
    degrees, as OpenSim's ``Storage`` converts only those.
    """
    import opensim

    model = opensim.Model(str(setup.model_file))
    cs = model.getCoordinateSet()
    out = []
    for i in range(cs.getSize()):
        c = cs.get(i)
        out.append((c.getName(), c.getMotionType() == 1, float(c.getDefaultValue())))
    return out


def _markers(setup: IKSetup, plan: BodyPlan, tracks) -> tuple[np.ndarray, np.ndarray]:
    """Targets ``(T, J, 3)`` in metres and keypoint weights ``(J,)`` of the marker tasks."""
    index = {n: i for i, n in enumerate(plan.joint_names)}
    names = [str(k) for k in tracks["keypoint"].values]
    column = {n: i for i, n in enumerate(names)}
    pos = np.asarray(
        tracks["position"].isel(individual=0).transpose("time", "keypoint", "space").values,
        np.float64,
    )
    pos = pos * unit_factor(tracks.attrs.get("unit", "m"), "m", str(setup.marker_file))
    targets = np.full((pos.shape[0], plan.n_joints, 3), np.nan)
    weights = np.zeros(plan.n_joints)
    for task in setup.marker_tasks:
        field = f"{setup.path}: InverseKinematicsTool.IKTaskSet.IKMarkerTask[{task.name!r}]"
        if task.name not in index:
            raise ConfigError(f"{field}: no marker {task.name!r} in {setup.model_file}")
        if task.name not in column:
            raise ConfigError(
                f"{field}: no marker {task.name!r} in {setup.marker_file}; "
                f"its markers: {', '.join(names)}"
            )
        targets[:, index[task.name]] = pos[:, column[task.name]]
        weights[index[task.name]] = task.weight
    return targets, weights


def _tasks(setup: IKSetup, plan: BodyPlan, coords, time: np.ndarray) -> CoordinateTasks:
    """The coordinate tasks as DOF tasks (``dof = coordinate * scale + offset``)."""
    config = (plan.extras or {})["x-source"]["engine_configuration"]
    entries = {e["coordinate"]: e for e in config["entries"] if e.get("type") != "frozen"}
    meta = {name: (rot, default) for name, rot, default in coords}
    storage = read_storage(setup.coordinate_file) if setup.coordinate_file else None
    weight: dict[str, float] = {}
    target: dict[str, float | np.ndarray] = {}
    for task in setup.coordinate_tasks:
        field = f"{setup.path}: InverseKinematicsTool.IKTaskSet.IKCoordinateTask[{task.name!r}]"
        if task.name not in meta:
            raise ConfigError(
                f"{field}: no coordinate {task.name!r} in {setup.model_file}; "
                f"valid: {', '.join(meta)}"
            )
        if task.name not in entries:
            raise ConfigError(
                f"{field}: coordinate {task.name!r} is not a free coordinate of the "
                "imported model (dependent or locked), so it cannot have a task"
            )
        rot, default = meta[task.name]
        if task.value_type == "default_value":
            value: float | np.ndarray = default
        elif task.value_type == "manual_value":
            value = task.value
        else:
            assert storage is not None
            cols = [str(c) for c in storage["coordinate"].values]
            if task.name not in cols:
                raise ConfigError(
                    f"{field}: value_type from_file, but {setup.coordinate_file} has no "
                    f"column {task.name!r}"
                )
            col = np.asarray(storage["value"].sel(coordinate=task.name).values, np.float64)
            if rot and storage.attrs.get("in_degrees"):
                col = np.radians(col)
            value = np.interp(time, np.asarray(storage["time"].values, np.float64), col)
        e = entries[task.name]
        weight[e["dof"]] = task.weight / float(e["scale"]) ** 2
        target[e["dof"]] = np.asarray(value) * float(e["scale"]) + float(e["offset"])
    return CoordinateTasks(weight, target)


def _errors_text(time: np.ndarray, errors: np.ndarray) -> str:
    lines = [
        "Model Marker Errors from IK",
        "version=1",
        f"nRows={time.size}",
        "nColumns=4",
        "inDegrees=no",
        "endheader",
        "time\ttotal_squared_error\tmarker_error_RMS\tmarker_error_max",
    ]
    table = np.column_stack([time, errors])
    lines += ["\t".join(f"{v:.12g}" for v in row) for row in table]
    return "\n".join(lines) + "\n"


def ik_problem(
    setup_path: str | Path,
    *,
    model_file: str | Path | None = None,
    marker_file: str | Path | None = None,
) -> IKProblem:
    """Read an ``InverseKinematicsTool`` setup into the fit :func:`run_ik` makes of it.

    ``model_file`` and ``marker_file`` replace the setup's files as in :func:`run_ik`.

    Raises
    ------
    ConfigError
        As :func:`run_ik`.
    """
    from pipeline.bodyplan.importers.osim import import_osim

    setup = read_ik_setup(setup_path, model_file=model_file, marker_file=marker_file)
    with warnings.catch_warnings():  # said below, without the DOFs a coordinate task sets
        warnings.filterwarnings("ignore", category=UnobservableDofWarning)
        plan = import_osim(setup.model_file)
    tracks = trc.read(setup.marker_file)
    time_all = np.asarray(tracks["time"].values, np.float64)
    t0, t1 = setup.time_range
    keep = (time_all >= t0 - TIME_SLACK) & (time_all <= t1 + TIME_SLACK)
    if not keep.any():
        raise ConfigError(
            f"{setup.path}: InverseKinematicsTool.time_range: {t0} to {t1} s holds no frame "
            f"of {setup.marker_file} ({time_all[0]} to {time_all[-1]} s)"
        )
    tracks = tracks.isel(time=np.flatnonzero(keep))
    time = time_all[keep]
    coords = _coordinates(setup)
    targets, kw = _markers(setup, plan, tracks)
    tasks = _tasks(setup, plan, coords, time)
    warn_unobservable(
        plan.joints,
        str(setup.model_file),
        settled={d for d, w in tasks.weight.items() if w > 0},
        subject="DOFs with no marker below them and no coordinate task",
        stacklevel=3,
    )
    config = ik_solver_config(setup.accuracy)
    return IKProblem(setup, plan, time, coords, targets, kw, tasks, config)


def run_ik(
    setup_path: str | Path,
    output_dir: str | Path | None = None,
    *,
    model_file: str | Path | None = None,
    marker_file: str | Path | None = None,
) -> IKRun:
    """Fit an ``InverseKinematicsTool`` setup and write OpenSim's outputs.

    Parameters
    ----------
    setup_path : str or Path
        The setup file (:func:`~pipeline.opensim_setup.ik_setup.read_ik_setup`).
    output_dir : str or Path, optional
        Write both files here (under their own names) instead of where the setup says.
    model_file, marker_file : str or Path, optional
        The ``.osim`` model and the ``.trc`` to use instead of the setup's (a setup
        shipped apart from its project, as Pose2Sim's is, names files that are not there);
        the setup's own are then not required to exist.

    Returns
    -------
    IKRun

    Raises
    ------
    ConfigError
        Setup problems, a marker task naming a marker missing from the model or the
        ``.trc``, a coordinate task naming an unknown or dependent coordinate, no frame
        in the time range. Nothing is written then.
    """
    problem = ik_problem(setup_path, model_file=model_file, marker_file=marker_file)
    setup, plan, time, coords = problem.setup, problem.plan, problem.time, problem.coordinates
    targets, kw = problem.targets, problem.keypoint_weights
    motion, errors_file = setup.output_motion_file, setup.marker_errors_file
    if output_dir is not None:
        motion = Path(output_dir) / motion.name
        errors_file = Path(output_dir) / errors_file.name
    fit = solve_sequence(
        plan, targets, config=problem.config, keypoint_weights=kw, coordinate_tasks=problem.tasks
    )
    q = np.asarray(fit.dof_value, np.float64)
    values = to_engine_configuration(plan, q)
    assert isinstance(values, dict)
    columns = {}
    for name, rot, _ in coords:
        v = np.asarray(values[name], np.float64)
        columns[name] = np.degrees(v) if rot else v
    d2 = np.sum((np.asarray(forward_kinematics(plan, q), np.float64) - targets) ** 2, axis=-1)
    used = (kw > 0)[None] & np.isfinite(d2)
    d2 = np.where(used, d2, 0.0)
    n = np.maximum(used.sum(axis=1), 1)
    total = d2.sum(axis=1)
    errors = np.column_stack([total, np.sqrt(total / n), np.sqrt(d2.max(axis=1))])
    with atomic_files(motion, errors_file) as (tmp_motion, tmp_errors):
        tmp_motion.write_text(mot_text("Coordinates", time, columns), encoding="utf-8")
        tmp_errors.write_text(_errors_text(time, errors), encoding="utf-8")
    return IKRun(
        time=time,
        coordinates=columns,
        marker_errors=errors,
        weighted_error=(d2 * kw).sum(axis=1),
        iterations=np.asarray(fit.iterations),
        motion_file=motion,
        errors_file=errors_file,
    )
