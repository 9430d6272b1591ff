"""An OpenSim IK setup's task set as terms of a kinefit fit (the archive flows' IK setups).

An archive fits its own sessions with its own body plan, so of an ``InverseKinematicsTool``
setup only its ``IKTaskSet`` is used (its model, marker file and time range are not
needed and not read):

- the applied ``IKMarkerTask`` weights become ``SolverConfig.keypoint_weights``, every
  other joint of the plan weighted 0, as OpenSim leaves markers without a task out;
- the applied ``IKCoordinateTask`` entries become
  :class:`~pipeline.solve.CoordinateTasks` on the plan's DOFs (through the imported
  plan's ``engine_configuration``: ``dof = scale * coordinate + offset``; a plan without
  one names its DOFs as the coordinates):
  ``default_value`` holds the DOF at the plan's neutral value (an imported model's
  default), ``manual_value`` at ``value``. ``from_file`` trajectories belong to one
  trial's times and are refused here (``kinefit ik`` runs them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ConfigError
from pipeline.opensim_setup.ik_setup import CoordinateTask, MarkerTask, _tasks
from pipeline.opensim_setup.setup_xml import tool_element
from pipeline.solve import CoordinateTasks, SolverConfig

__all__ = ["FitTerms", "fit_terms", "read_task_set", "setup_fit"]


@dataclass(frozen=True)
class FitTerms:
    """What an IK setup adds to a fit.

    Attributes
    ----------
    setup : str
        The setup file.
    keypoint_weights : dict of str to float
        Per joint of the plan (0 for joints without a marker task).
    coordinate_tasks : CoordinateTasks or None
        None when the setup has no applied coordinate task.
    """

    setup: str
    keypoint_weights: dict[str, float]
    coordinate_tasks: CoordinateTasks | None


def read_task_set(path: str | Path) -> tuple[tuple[MarkerTask, ...], tuple[CoordinateTask, ...]]:
    """The applied tasks of an IK setup's ``IKTaskSet`` (nothing else is read).

    Raises
    ------
    ConfigError
        No such file, not XML, not an IK setup, a bad task field, a ``from_file`` task.
    """
    path, tool = tool_element(path, "InverseKinematicsTool")
    markers, coords = _tasks(path, tool)
    for task in coords:
        if task.value_type == "from_file":
            raise ConfigError(
                f"{path}: InverseKinematicsTool.IKTaskSet.IKCoordinateTask[{task.name!r}]."
                "value_type: from_file is one trial's trajectory, not an archive's; valid "
                "here: default_value, manual_value (kinefit ik SETUP.xml runs from_file)"
            )
    if not markers:
        raise ConfigError(
            f"{path}: InverseKinematicsTool.IKTaskSet: no applied IKMarkerTask; a fit "
            "needs at least one marker"
        )
    return markers, coords


def _entries(plan: BodyPlan) -> dict[str, dict[str, Any]]:
    config = (plan.extras or {}).get("x-source", {}).get("engine_configuration")
    if not config:
        return {d: {"dof": d, "scale": 1.0, "offset": 0.0} for d in plan.dof_names}
    return {e["coordinate"]: e for e in config["entries"] if e.get("type") != "frozen"}


def fit_terms(setup: str | Path, plan: BodyPlan) -> FitTerms:
    """The marker weights and coordinate tasks of ``setup`` on ``plan``.

    Raises
    ------
    ConfigError
        :func:`read_task_set`'s errors; a marker task naming no joint of the plan or a
        coordinate task naming no free coordinate of it (the valid names listed).
    """
    path = Path(setup).resolve()
    markers, coords = read_task_set(path)
    names = list(plan.joint_names)
    weights = dict.fromkeys(names, 0.0)
    for task in markers:
        if task.name not in weights:
            raise ConfigError(
                f"{path}: InverseKinematicsTool.IKTaskSet.IKMarkerTask[{task.name!r}]: no "
                f"joint {task.name!r} in body plan {plan.name or '<plan>'!r}; valid: "
                f"{', '.join(names)}"
            )
        weights[task.name] = float(task.weight)
    entries = _entries(plan)
    neutral = dict(zip(plan.dof_names, plan.neutral, strict=True))
    weight: dict[str, float] = {}
    target: dict[str, float] = {}
    for task in coords:
        if task.name not in entries:
            raise ConfigError(
                f"{path}: InverseKinematicsTool.IKTaskSet.IKCoordinateTask[{task.name!r}]: "
                f"no free coordinate {task.name!r} in body plan {plan.name or '<plan>'!r}; "
                f"valid: {', '.join(entries)}"
            )
        e = entries[task.name]
        scale = float(e["scale"])
        weight[e["dof"]] = task.weight / scale**2
        target[e["dof"]] = (
            float(neutral[e["dof"]])
            if task.value_type == "default_value"
            else task.value * scale + float(e["offset"])
        )
    tasks = CoordinateTasks(weight, target) if weight else None
    return FitTerms(str(path), weights, tasks)


def setup_fit(
    setup: str | Path | None, plan: BodyPlan, config: SolverConfig
) -> tuple[SolverConfig, CoordinateTasks | None]:
    """The solver config and coordinate tasks of a fit of ``plan`` under ``setup``.

    ``config`` with the setup's marker weights as its ``keypoint_weights``, and the
    setup's coordinate tasks; ``config`` and None unchanged when ``setup`` is None.
    """
    if setup is None:
        return config, None
    terms = fit_terms(setup, plan)
    return replace(config, keypoint_weights=dict(terms.keypoint_weights)), terms.coordinate_tasks
