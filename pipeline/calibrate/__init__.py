"""Subject calibration: fit the body plan's proportions and markers to an individual.

:func:`calibrate` chooses well-observed, diverse frames from an individual's sessions and
solves their poses jointly with the plan's calibration parameters (a global scale,
left/right-symmetric segment scales, marker offsets, a prior toward the template); the
:class:`Calibration` holds the calibrated plan (a normal version-2 plan) and its record.
:mod:`pipeline.calibrate.identity` keeps one calibration per identity across an archive.
"""

from pipeline.calibrate.calibration_record import Calibration, calibrated_plan, load_calibration
from pipeline.calibrate.frame_selection import FrameChoice, choose_frames
from pipeline.calibrate.params import CalibrationSpec, Parameters, PriorWeights, resolve
from pipeline.calibrate.solve import METHODS, ShapeSolution, solve_shape
from pipeline.calibrate.subject import (
    CalibrationConfig,
    SessionTargets,
    calibrate,
    calibration_fingerprint,
    session_targets,
)

__all__ = [
    "METHODS",
    "Calibration",
    "CalibrationConfig",
    "CalibrationSpec",
    "FrameChoice",
    "Parameters",
    "PriorWeights",
    "SessionTargets",
    "ShapeSolution",
    "calibrate",
    "calibrated_plan",
    "calibration_fingerprint",
    "choose_frames",
    "load_calibration",
    "resolve",
    "session_targets",
    "solve_shape",
]
