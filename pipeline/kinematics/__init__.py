"""Batched rotations, forward kinematics and keypoint Jacobians."""

from pipeline.kinematics.forward import (
    forward_kinematics,
    jacobian,
    joint_rotations_local,
)
from pipeline.kinematics.model import KinematicModel, compile_plan

__all__ = [
    "KinematicModel",
    "compile_plan",
    "forward_kinematics",
    "jacobian",
    "joint_rotations_local",
]
