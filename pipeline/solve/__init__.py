"""Batched least-squares inverse kinematics: configs, observation mappers, solvers."""

from pipeline.solve.batch import solve_sequences
from pipeline.solve.config import SolverConfig
from pipeline.solve.mappers import Identity3D, XYView
from pipeline.solve.result import FitResult
from pipeline.solve.solver import solve_frames, solve_sequence
from pipeline.solve.tasks import CoordinateTasks

__all__ = [
    "CoordinateTasks",
    "FitResult",
    "Identity3D",
    "SolverConfig",
    "XYView",
    "solve_frames",
    "solve_sequence",
    "solve_sequences",
]
