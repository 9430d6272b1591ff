"""Synthetic sessions with a known answer, for tests, benchmarks and the demo.

A session is rendered from smooth random trajectories: every DOF follows a sum of a few
low-frequency sinusoids around its neutral value, squashed into its limits (a ball's swing
into its cone), and the root wanders and turns smoothly. Forward kinematics turns the pose
into keypoints, which then get measurement noise, dropouts (runs of missing frames),
outliers and confidence values. Each individual gets its own trajectories and place.

Everything random comes from the ``numpy.random.Generator`` passed in; nothing is global.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from pipeline.bodyplan.importers import plan_up_axis
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.kinematics.rotations import rotvec_to_quat
from pipeline.tracks.schema import make_tracks_dataset

#: Frames rendered through forward kinematics at a time (bounds memory for long sessions).
BLOCK_FRAMES = 20_000


@dataclass(frozen=True)
class SynthConfig:
    """What a synthetic session looks like. Lengths are fractions of the body size.

    The body size is the largest extent of the plan's neutral pose (length units).

    Attributes
    ----------
    n_frames : int
        Frames per individual.
    fps : float
        Frame rate (Hz); time stamps are ``frame / fps`` seconds.
    n_individuals : int
        Individuals, named ``individual_0``, ...
    amplitude : float
        DOF excursion (rad) around neutral for unbounded rotations; for bounded DOFs the
        same number is the spread in logit space (1 moves well inside the limits). Swings
        use ``amplitude`` times the cone half-angles, capped at 0.9 of the cone.
    max_frequency : float
        Highest frequency (Hz) of the DOF and root sinusoids; the lowest is a tenth of it.
    n_harmonics : int
        Sinusoids summed per trajectory.
    root_travel : float
        Root position excursion, as a fraction of the body size.
    root_turn : float
        Root orientation excursion (rad) about each axis.
    noise : float
        Standard deviation of Gaussian keypoint noise, fraction of the body size.
    dropout : float
        Fraction of keypoint-frames missing (NaN), in runs of ``dropout_run`` frames.
    dropout_run : int
        Length (frames) of a dropout run.
    outliers : float
        Fraction of keypoint-frames displaced by ``outlier_scale`` in a random direction.
    outlier_scale : float
        Outlier displacement, fraction of the body size.
    up_axis : {"x", "y", "z"}
        The world's up axis (the mannequin is ``"y"``): individuals turn (heading) about
        it, tilt only a quarter of ``root_turn`` about the others, and bob along it a
        tenth as far as they travel.
    unit : str
        Length unit written to the tracks (the plan's unit, e.g. ``"mm"``, ``"m"``).
    """

    n_frames: int = 1000
    fps: float = 100.0
    n_individuals: int = 1
    amplitude: float = 0.3
    max_frequency: float = 1.0
    n_harmonics: int = 3
    root_travel: float = 0.5
    root_turn: float = 0.3
    noise: float = 0.0
    dropout: float = 0.0
    dropout_run: int = 5
    outliers: float = 0.0
    outlier_scale: float = 0.2
    up_axis: str = "z"
    unit: str = "body"

    def __post_init__(self) -> None:
        if self.up_axis not in ("x", "y", "z"):
            raise ValueError(f"SynthConfig.up_axis: {self.up_axis!r} is not one of x, y, z")


class SynthSession(NamedTuple):
    """A synthetic session and its ground truth.

    Attributes
    ----------
    tracks : xarray.Dataset
        Movement poses schema; keypoints are the plan's joint names.
    truth : xarray.Dataset
        ``dof_value (time, individual, dof)``, ``root_position (time, individual, space)``,
        ``root_orientation (time, individual, quat)`` (w, x, y, z) and the noise-free
        ``position (time, space, keypoint, individual)``.
    """

    tracks: xr.Dataset
    truth: xr.Dataset


def body_size(plan: BodyPlan) -> float:
    """Largest extent (length units) of the plan's neutral pose; 1.0 for a point body."""
    points = forward_kinematics(plan, np.asarray(plan.neutral))
    extent = float(np.max(np.ptp(points, axis=0)))
    return extent if extent > 0 else 1.0


def _smooth(rng: np.random.Generator, t: np.ndarray, n: int, cfg: SynthConfig) -> np.ndarray:
    """``(T, n)`` smooth signals in [-1, 1]: normalized sums of random sinusoids."""
    freq = rng.uniform(cfg.max_frequency / 10, cfg.max_frequency, size=(n, cfg.n_harmonics))
    phase = rng.uniform(0, 2 * np.pi, size=(n, cfg.n_harmonics))
    weight = rng.uniform(0.5, 1.0, size=(n, cfg.n_harmonics))
    weight /= weight.sum(axis=1, keepdims=True)
    out = np.zeros((t.size, n))
    for h in range(cfg.n_harmonics):
        out += weight[:, h] * np.sin(2 * np.pi * freq[:, h] * t[:, None] + phase[:, h])
    return out


def _swing_limits(plan: BodyPlan) -> dict[int, tuple[float, float, int]]:
    """Map the first swing DOF index of each ball joint to (half_y, half_z, second index)."""
    out: dict[int, tuple[float, float, int]] = {}
    index = 0
    for joint in plan.joints:
        swings = [index + i for i, d in enumerate(joint.dofs) if d.type == "swing"]
        if len(swings) == 2:
            cone = joint.kind.swing_limit if joint.kind and joint.kind.swing_limit else None
            half = cone if cone is not None else (np.pi / 2, np.pi / 2)
            out[swings[0]] = (float(half[0]), float(half[1]), swings[1])
        index += len(joint.dofs)
    return out


def dof_trajectories(
    plan: BodyPlan, t: np.ndarray, cfg: SynthConfig, rng: np.random.Generator
) -> np.ndarray:
    """Smooth DOF values ``(T, n_dofs)`` strictly inside the plan's limits.

    Bounded DOFs move in logit space around their neutral value (so they never touch a
    limit); unbounded ones move ``amplitude`` rad (a tenth of that in length units for
    slides) around neutral; ball swings stay inside 0.9 of their elliptical cone.
    """
    s = _smooth(rng, t, plan.n_dofs, cfg)
    q = np.empty_like(s)
    lower, upper, neutral = plan.lower, plan.upper, plan.neutral
    types = [d.type for j in plan.joints for d in j.dofs]
    swings = _swing_limits(plan)
    second = {v[2] for v in swings.values()}
    for d in range(plan.n_dofs):
        if d in swings:
            hy, hz, d2 = swings[d]
            u = np.stack([s[:, d], s[:, d2]], axis=1) * cfg.amplitude
            radius = np.linalg.norm(u, axis=1, keepdims=True)
            scale = np.where(radius > 0, 0.9 * np.tanh(radius) / np.maximum(radius, 1e-12), 0.9)
            q[:, d], q[:, d2] = (u * scale)[:, 0] * hy, (u * scale)[:, 1] * hz
        elif d in second:
            continue
        elif lower[d] == upper[d]:  # locked (OpenSim's locked coordinates): its one value
            q[:, d] = lower[d]
        elif np.isfinite(lower[d]) and np.isfinite(upper[d]):
            span = upper[d] - lower[d]
            frac = np.clip((neutral[d] - lower[d]) / span, 0.05, 0.95)
            logit = np.log(frac / (1 - frac)) + 2 * cfg.amplitude * s[:, d]
            q[:, d] = lower[d] + span * (0.02 + 0.96 / (1 + np.exp(-logit)))
        else:
            amp = cfg.amplitude * (0.1 if types[d] == "slide" else 1.0)
            q[:, d] = np.clip(neutral[d] + amp * s[:, d], lower[d], upper[d])
    return q


def _root_pose(plan, t, cfg, rng, size, n_individual, index):
    if plan.fixed_base:
        return np.zeros((t.size, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (t.size, 1))
    up = "xyz".index(cfg.up_axis)
    side = (up + 1) % 3
    place = np.zeros(3)
    place[side] = 2.0 * size * index
    position = place + cfg.root_travel * size * _smooth(rng, t, 3, cfg)
    position[:, up] *= 0.1
    heading = rng.uniform(-np.pi, np.pi)
    rotvec = cfg.root_turn * _smooth(rng, t, 3, cfg)
    tilt = [a for a in range(3) if a != up]
    rotvec[:, tilt] *= 0.25
    rotvec[:, up] += heading
    return position, rotvec_to_quat(rotvec)


def _measure(clean, cfg, rng, size):
    """Noise, dropout runs and outliers on ``(T, J, 3)`` keypoints; returns (pos, conf)."""
    n_frames, n_joints, _ = clean.shape
    position = clean + rng.normal(0.0, cfg.noise * size, clean.shape)
    confidence = rng.uniform(0.8, 1.0, (n_frames, n_joints))
    if cfg.outliers > 0:
        hit = rng.random((n_frames, n_joints)) < cfg.outliers
        direction = rng.normal(size=(int(hit.sum()), 3))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        position[hit] += cfg.outlier_scale * size * direction
        confidence[hit] = rng.uniform(0.0, 0.6, int(hit.sum()))
    if cfg.dropout > 0:
        run = max(int(cfg.dropout_run), 1)
        starts = rng.random((n_frames, n_joints)) < cfg.dropout / run
        missing = np.zeros_like(starts)
        for k in range(run):
            missing[k:] |= starts[: n_frames - k]
        position[missing] = np.nan
        confidence[missing] = 0.0
    return position, confidence


def synthesize(
    plan: BodyPlan, config: SynthConfig, rng: np.random.Generator, *, session: str = "synthetic"
) -> SynthSession:
    """Render a synthetic session of ``plan`` with known DOF values and root pose.

    Parameters
    ----------
    plan : BodyPlan
    config : SynthConfig
    rng : numpy.random.Generator
        The only source of randomness; the same seed gives the same session.
    session : str
        Name written to the tracks' ``session`` attr.

    Returns
    -------
    SynthSession
        ``tracks`` (movement poses schema, float32, keypoints = joint names, ``unit``
        from the config; ``up_axis`` the plan's own when it declares one, since the plan
        is not turned and stands along it, else the config's) and ``truth`` (float64
        ground truth).
    """
    size = body_size(plan)
    n_frames, n_ind = config.n_frames, config.n_individuals
    t = np.arange(n_frames) / config.fps
    dof = np.empty((n_frames, n_ind, plan.n_dofs))
    root_p = np.empty((n_frames, n_ind, 3))
    root_q = np.empty((n_frames, n_ind, 4))
    clean = np.empty((n_frames, 3, plan.n_joints, n_ind))
    measured = np.empty((n_frames, 3, plan.n_joints, n_ind), dtype=np.float32)
    confidence = np.empty((n_frames, plan.n_joints, n_ind), dtype=np.float32)
    for i in range(n_ind):
        dof[:, i] = dof_trajectories(plan, t, config, rng)
        root_p[:, i], root_q[:, i] = _root_pose(plan, t, config, rng, size, n_ind, i)
        for lo in range(0, n_frames, BLOCK_FRAMES):
            block = slice(lo, min(lo + BLOCK_FRAMES, n_frames))
            points = forward_kinematics(plan, dof[block, i], root_p[block, i], root_q[block, i])
            clean[block, :, :, i] = points.transpose(0, 2, 1)
            pos, conf = _measure(points, config, rng, size)
            measured[block, :, :, i] = pos.transpose(0, 2, 1)
            confidence[block, :, i] = conf
    individuals = [f"individual_{i}" for i in range(n_ind)]
    tracks = make_tracks_dataset(
        measured,
        confidence,
        keypoints=plan.joint_names,
        individuals=individuals,
        fps=config.fps,
        source_software="kinefit.synth",
        unit=config.unit,
        up_axis=plan_up_axis(plan) or config.up_axis,
        session=session,
    )
    coords = {
        "time": tracks["time"].values,
        "individual": tracks["individual"].values,
        "dof": np.array(plan.dof_names, dtype=object),
        "space": np.array(["x", "y", "z"], dtype=object),
        "quat": np.array(["w", "x", "y", "z"], dtype=object),
        "keypoint": tracks["keypoint"].values,
    }
    truth = xr.Dataset(
        {
            "dof_value": (("time", "individual", "dof"), dof),
            "root_position": (("time", "individual", "space"), root_p),
            "root_orientation": (("time", "individual", "quat"), root_q),
            "position": (("time", "space", "keypoint", "individual"), clean),
        },
        coords=coords,
        attrs={"body_size": size, "fps": config.fps},
    )
    return SynthSession(tracks, truth)
