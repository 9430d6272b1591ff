"""Calibrated cameras: the model, projection with lens distortion, files, triangulation.

``Camera`` (:mod:`.model`) is one frozen, validated camera; :func:`pack` turns a list of
them into plain arrays for :func:`project` / :func:`project_jacobian` / :func:`undistort`
(:mod:`.projection`, formulas in its docstring); :func:`read_calibration` and
:func:`write_calibration` (:mod:`.files`) read Anipose/Pose2Sim TOML and OpenCV-style
YAML/JSON and write the Anipose layout; :func:`triangulate` (:mod:`.triangulate`) is the
linear DLT from several views.
"""

from pipeline.cameras.calibration_files import match_views, read_calibration, write_calibration
from pipeline.cameras.camera import DISTORTION_MODELS, LENGTH_UNITS, Camera
from pipeline.cameras.lens_projection import (
    CameraArrays,
    distort,
    pack,
    project,
    project_jacobian,
    undistort,
)
from pipeline.cameras.triangulate import reprojection_error, triangulate

__all__ = [
    "DISTORTION_MODELS",
    "LENGTH_UNITS",
    "Camera",
    "CameraArrays",
    "distort",
    "match_views",
    "pack",
    "project",
    "project_jacobian",
    "read_calibration",
    "reprojection_error",
    "triangulate",
    "undistort",
    "write_calibration",
]
