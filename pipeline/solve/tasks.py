"""Per-keypoint weights and per-DOF coordinate tasks of a fit (OpenSim's IK task set).

Keypoint weights (OpenSim's ``IKMarkerTask`` weights) multiply every frame's observation
weights of a keypoint. A coordinate task (OpenSim's ``IKCoordinateTask``) adds
``weight * (q_d - target_d)^2`` to a frame's objective, with a constant target or one per
frame; both engines' prior terms carry it (:mod:`pipeline.solve.numpy.normal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ConfigError

__all__ = ["CoordinateTasks", "check_keypoint_weights", "named_keypoint_weights"]


def check_keypoint_weights(weights, n_joints: int) -> np.ndarray:
    """``weights`` as a ``(n_joints,)`` float64 array of finite values >= 0.

    Raises
    ------
    ConfigError
        Wrong shape, negative or non-finite values.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_joints,):
        raise ConfigError(
            f"keypoint_weights: shape {w.shape}; expected ({n_joints},), one per joint"
        )
    if not np.all(np.isfinite(w) & (w >= 0)):
        raise ConfigError("keypoint_weights: every weight must be a finite number >= 0")
    return w


def named_keypoint_weights(weights: dict[str, float], plan: BodyPlan) -> np.ndarray:
    """``(n_joints,)`` weights from joint names (``SolverConfig.keypoint_weights``).

    Joints not named keep 1.

    Raises
    ------
    ConfigError
        A name that is no joint of ``plan`` (the valid names listed).
    """
    names = list(plan.joint_names)
    index = {n: i for i, n in enumerate(names)}
    out = np.ones(len(names))
    for name, w in weights.items():
        if name not in index:
            raise ConfigError(
                f"SolverConfig.keypoint_weights: {name!r} is not a joint of body plan "
                f"{plan.name or '<plan>'!r}; valid: {', '.join(names)}"
            )
        out[index[name]] = float(w)
    return out


@dataclass(frozen=True)
class CoordinateTasks:
    """Targets and weights on DOFs of a plan.

    Attributes
    ----------
    weight : dict of str to float
        Task weight per DOF name (observation units squared per DOF unit squared, i.e.
        m^2/rad^2 for an angle of a plan in metres).
    target : dict of str to float or (T,) array
        Target per DOF name, constant or one per frame, in DOF units (rad, or the
        plan's length unit for slides).
    """

    weight: dict[str, float] = field(default_factory=dict)
    target: dict[str, float | np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = sorted(set(self.weight) ^ set(self.target))
        if missing:
            raise ConfigError(
                f"coordinate tasks: {', '.join(missing)} must have both a weight and a target"
            )
        for name, w in self.weight.items():
            if not (np.isfinite(w) and w >= 0):
                raise ConfigError(f"coordinate task {name!r}: weight must be >= 0, not {w!r}")

    def arrays(self, plan: BodyPlan, n_frames: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``(N,)`` weights and ``(T, N)`` targets over the plan's DOFs.

        Raises
        ------
        ConfigError
            A task names no DOF of ``plan`` (the valid names listed), or a trajectory
            target is not ``(T,)`` or not finite.
        """
        names = list(plan.dof_names)
        index = {n: i for i, n in enumerate(names)}
        weight = np.zeros(len(names))
        target = np.zeros((n_frames, len(names)))
        for name, w in self.weight.items():
            if name not in index:
                raise ConfigError(
                    f"coordinate task {name!r}: not a DOF of body plan "
                    f"{plan.name or '<plan>'!r}; valid: {', '.join(names)}"
                )
            value = np.asarray(self.target[name], dtype=np.float64)
            if value.ndim and value.shape != (n_frames,):
                raise ConfigError(
                    f"coordinate task {name!r}: target has shape {value.shape}; expected a "
                    f"number or ({n_frames},), one per frame"
                )
            if not np.all(np.isfinite(value)):
                raise ConfigError(f"coordinate task {name!r}: target must be finite")
            weight[index[name]] = float(w)
            target[:, index[name]] = value
        return weight, target
