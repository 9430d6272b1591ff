"""Synthetic upright motions for the Kimodo bridge tests, and fit stores made from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.bodyplan import BodyPlan
from pipeline.export.kimodo.fk import rot_y, up_axis_matrix
from pipeline.fit import fit_session
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.rotations import expmap, matrix_to_quat
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.synth import SynthConfig, dof_trajectories
from pipeline.tracks.schema import make_tracks_dataset

#: Converges noise-free frames tightly (the fit is only the producer of a real store here).
SOLVER = SolverConfig(mode="lm", n_iterations=30, position_tolerance=1e-7, angle_tolerance=1e-7)


def upright_truth(plan: BodyPlan, n_frames: int, fps: float, rng, *, amplitude: float = 0.35):
    """DOFs, root position and root rotation (Y-up, plan units) of a walking, turning body."""
    t = np.arange(n_frames) / fps
    dofs = dof_trajectories(plan, t, SynthConfig(amplitude=amplitude, max_frequency=1.0), rng)
    rest = forward_kinematics(plan, np.zeros(plan.n_dofs))
    height = -float(rest[:, 1].min())
    heading = rng.uniform(-np.pi, np.pi) + 0.6 * np.sin(2 * np.pi * 0.3 * t)
    tilt = 0.1 * np.stack([np.sin(2 * np.pi * 0.7 * t), 0 * t, np.cos(2 * np.pi * 0.5 * t)], 1)
    rotation = rot_y(heading) @ expmap(tilt)
    forward = np.stack([np.sin(heading), 0 * t, np.cos(heading)], 1)
    position = np.cumsum(forward, axis=0) * (1.2 / fps) + np.array([1.5, height, -0.7])
    position[:, 1] += 0.03 * np.sin(2 * np.pi * 1.8 * t)
    return dofs, position, rotation


def upright_tracks(
    plan: BodyPlan, n_frames: int, fps: float, rng, *, up_axis: str = "z", unit: str = "m"
):
    """Noise-free tracks of :func:`upright_truth`, in a world whose up is ``up_axis``."""
    dofs, position, rotation = upright_truth(plan, n_frames, fps, rng)
    back = up_axis_matrix(up_axis).T  # Y-up -> the tracks' world
    points = forward_kinematics(plan, dofs, position @ back.T, matrix_to_quat(back @ rotation))
    return make_tracks_dataset(
        points.transpose(0, 2, 1),
        keypoints=plan.joint_names,
        fps=fps,
        source_software="kinefit tests",
        unit=unit,
        up_axis=up_axis,
        session="upright",
    )


def fit_store(plan: BodyPlan, tracks, folder: Path, name: str = "fit") -> Path:
    """A real fit store of ``tracks`` (in-process, one chunk)."""
    path = write_tracks(tracks, folder / f"{name}-tracks.zarr")
    out = folder / f"{name}.zarr"
    fit_session(path, plan, SOLVER, out, chunk_frames=tracks.sizes["time"])
    return out
