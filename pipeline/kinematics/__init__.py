"""Batched rotations, forward kinematics and keypoint Jacobians."""

from pipeline.kinematics.fk_jacobian import (
    forward_kinematics,
    jacobian,
    joint_rotations_local,
)
from pipeline.kinematics.plan_arrays import KinematicModel, compile_plan

__all__ = [
    "KinematicModel",
    "compile_plan",
    "forward_kinematics",
    "jacobian",
    "joint_rotations_local",
]
