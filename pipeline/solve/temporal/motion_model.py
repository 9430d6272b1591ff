"""The motion prior of ``temporal="smooth"``: constant acceleration driven by white jerk.

Every fitted coordinate (root position, root rotation increment, DOF) follows its own
constant-acceleration model: the state of a coordinate is its value, velocity and
acceleration, and the acceleration changes by white noise (the jerk) of power spectral
density ``sigma**2``. ``sigma`` is the *process-noise scale*, in physical units per
second: over one second the acceleration drifts by about ``sigma`` (rad s^-2 per sqrt(s)
for angles, ``SolverConfig.temporal_noise``; body sizes s^-2 per sqrt(s) for the root
position and slides, ``SolverConfig.temporal_position_noise``, times the plan's length
scale). Over a frame of ``dt`` seconds (with the state in frame units: value, velocity
times ``dt``, acceleration times ``dt**2``) the transition and its noise are

    F = [[1, 1, 1/2], [0, 1, 1], [0, 0, 1]]
    Q = sigma**2 dt**5 [[1/20, 1/8, 1/6], [1/8, 1/3, 1/2], [1/6, 1/2, 1]]

(the exact discretisation of the continuous white-jerk model). A larger scale follows
fast motion more closely and smooths less.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.errors import ConfigError

__all__ = [
    "MIN_FRAMES",
    "MEMORY_SPANS",
    "REFERENCE_NOISE",
    "check_fps",
    "check_noise",
    "coordinate_noise",
    "overlap_frames",
    "transition",
]

#: Fewest frames the smoother accepts: a constant-acceleration state needs three.
MIN_FRAMES = 3
#: Measurement noise (rad) the chunk overlap is sized for (:func:`overlap_frames`).
REFERENCE_NOISE = 0.05
#: Smoother time constants per overlap side: the influence of a frame decays by about
#: ``exp(-1)`` per time constant; measured on the fly at 1 % noise, a cut 90 frames away
#: still moves a frame by 2.6e-3 rad (tau ~ 30 frames), so 16 of them (274 frames at
#: the defaults and 100 fps) bring it under 1e-4 rad.
MEMORY_SPANS = 16.0

_F3 = np.array([[1.0, 1.0, 0.5], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
_Q3 = np.array([[1 / 20, 1 / 8, 1 / 6], [1 / 8, 1 / 3, 1 / 2], [1 / 6, 1 / 2, 1.0]])


def check_noise(name: str, value) -> float:
    """A process-noise scale as a float, or a :class:`ConfigError` naming ``name``.

    Parameters
    ----------
    name : str
        The setting (e.g. ``"SolverConfig.temporal_noise"``).
    value : float
        Must be finite and > 0.

    Returns
    -------
    float
    """
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"{name}: the process-noise scale must be a finite number > 0 "
            f"(rad s^-2 per sqrt(s) for angles, body sizes for positions), not {value!r}"
        )
    return float(value)


def check_fps(fps) -> float:
    """The frame rate as a float, or a :class:`ConfigError` naming ``fps``."""
    ok = isinstance(fps, int | float) and not isinstance(fps, bool)
    if fps is None or not ok or not math.isfinite(fps) or fps <= 0:
        raise ConfigError(
            f"fps: temporal='smooth' needs the session's frame rate (Hz, finite > 0), "
            f"not {fps!r}; pass fps= or set SolverConfig.temporal='none'"
        )
    return float(fps)


def coordinate_noise(
    angular: np.ndarray, n_root: int, noise: float, position_noise: float, scale: float
) -> np.ndarray:
    """Process-noise scale of every coordinate ``[root (n_root), DOFs]``.

    Parameters
    ----------
    angular : (N,) bool
        Angle DOFs (the others are slides).
    n_root : int
        6 for a free base (3 positions, 3 rotation increments), else 0.
    noise, position_noise : float
        Angle and position scales (positions in body sizes).
    scale : float
        The plan's length scale (length units per body size).

    Returns
    -------
    (n_root + N,) array
    """
    root = [position_noise * scale] * 3 + [noise] * 3 if n_root else []
    dofs = np.where(angular, noise, position_noise * scale)
    return np.concatenate([np.asarray(root, float), dofs])


def transition(sigma: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Transition ``F (3n, 3n)`` and process noise ``Q (3n, 3n)`` of one frame.

    The state is ``[values (n), velocities * dt (n), accelerations * dt**2 (n)]``.

    Parameters
    ----------
    sigma : (n,) array
        Process-noise scale of each coordinate (physical units).
    dt : float
        Frame interval (s).

    Returns
    -------
    F, Q : (3n, 3n) arrays
    """
    n = sigma.size
    f = np.kron(_F3, np.eye(n))
    q = np.kron(_Q3, np.diag(sigma**2 * dt**5))
    return f, q


def overlap_frames(noise: float, fps: float) -> int:
    """Frames a chunk reads on each side so that smoothing does not depend on chunking.

    The smoother's memory is its time constant ``tau = (r**2 / sigma**2)**(1/6)`` seconds
    (the steady state of the white-jerk model with measurement noise ``r``), taken at
    :data:`REFERENCE_NOISE`; the overlap is :data:`MEMORY_SPANS` of them, at least 8
    frames.

    Parameters
    ----------
    noise : float
        ``SolverConfig.temporal_noise``.
    fps : float

    Returns
    -------
    int
    """
    tau = (REFERENCE_NOISE**2 / noise**2) ** (1.0 / 6.0)
    return max(8, math.ceil(MEMORY_SPANS * tau * fps))
