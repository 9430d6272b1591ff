"""The temporal result of a sequence: smoothed or per-frame poses with their uncertainty.

:func:`annotate` turns the per-frame solutions of a sequence into the temporal result
``SolverConfig.temporal`` asks for: ``"none"`` keeps the poses and adds each frame's own
standard deviations (inverse normal matrix times the residual variance); ``"smooth"``
combines every frame's fit, with those deviations as its measurement noise, with the
constant-acceleration prior of :mod:`.model` in the per-coordinate forward filter and
RTS smoother of :mod:`.marginal`, and reports the posterior mean (clamped into the
limits), its standard deviation, velocity and acceleration. Both flag unobservable
coordinates (:mod:`.uncertainty`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pipeline.errors import ConfigError
from pipeline.solve.mappers import Identity3D
from pipeline.solve.numpy.pose import Pose, clamp, diagnostics
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult
from pipeline.solve.temporal.marginal import smooth_coordinates
from pipeline.solve.temporal.motion_model import MIN_FRAMES, check_fps, coordinate_noise
from pipeline.solve.temporal.uncertainty import (
    FrameMoments,
    frame_moments,
    frame_uncertainty,
    structural_observable,
)

__all__ = ["annotate"]


def _fields(model, std, observable, vel, acc) -> dict[str, np.ndarray]:
    nr = model.n_root
    t = std.shape[0]
    nan3 = np.full((t, 3), np.nan)
    root = (lambda a, s: a[:, s]) if nr else (lambda a, s: nan3)
    return {
        "dof_std": std[:, nr:],
        "dof_velocity": vel[:, nr:],
        "dof_acceleration": acc[:, nr:],
        "dof_observable": observable[:, nr:],
        "root_position_std": root(std, slice(0, 3)),
        "root_orientation_std": root(std, slice(3, 6)),
        "root_velocity": root(vel, slice(0, 3)),
        "root_angular_velocity": root(vel, slice(3, 6)),
        "root_acceleration": root(acc, slice(0, 3)),
        "root_angular_acceleration": root(acc, slice(3, 6)),
    }


def _pose_result(prob: Problem, result: FitResult, sm) -> FitResult:
    """Diagnostics of the smoothed poses, clamped into the limits.

    From the compiled kernel (no iterations) for 3D observations unless
    ``engine="numpy"``, else from the numpy engine.
    """
    model = prob.model
    t, nr, dt = prob.n_frames, model.n_root, model.dtype
    q, active = clamp(model, sm.value[:, nr:].astype(dt), wrap=True)
    root_pos = sm.value[:, :3] if nr else np.zeros((t, 3))
    root_quat = sm.orientation if nr else np.tile([1.0, 0.0, 0.0, 0.0], (t, 1))
    limit = np.asarray(result.limit_active) | active
    if isinstance(prob.mapper, Identity3D) and prob.config.engine != "numpy":
        from pipeline.solve.compiled import evaluate_compiled  # numba: loaded already

        out = evaluate_compiled(prob, q, root_pos, root_quat)
        return replace(out, iterations=result.iterations, stop_reason=result.stop_reason,
                       converged=result.converged, limit_active=limit)  # fmt: skip
    pose = Pose(root_pos.astype(dt), root_quat.astype(dt), q)
    return diagnostics(prob, pose, result.iterations, result.stop_reason, limit)


def annotate(
    prob: Problem,
    result: FitResult,
    fps: float | None = None,
    smooth: bool = False,
    moments: FrameMoments | None = None,
) -> FitResult:
    """The temporal result of per-frame solutions ``result`` of ``prob``.

    Parameters
    ----------
    prob : Problem
    result : FitResult
        Per-frame (or warm-started sequence) solutions, float64 or the config's dtype.
    fps : float, optional
        Frame rate (Hz); required when smoothing.
    smooth : bool
        Smooth (``temporal="smooth"``), else report the frames' own uncertainties.
    moments : FrameMoments, optional
        The frames' own uncertainty inputs at ``result``'s poses, when the engine
        computed them (the compiled one does, in its kernel); else computed here.

    Returns
    -------
    FitResult
        With ``dof_std``, ``dof_velocity``, ``dof_acceleration``, ``dof_observable`` and
        the root's (velocities NaN with ``temporal="none"``).
    """
    cfg, model = prob.config, prob.model
    t, nr = prob.n_frames, model.n_root
    n = nr + model.n_dofs
    if t == 0:
        empty = np.zeros((0, n))
        return replace(result, **_fields(model, empty, empty.astype(bool), empty, empty))
    if not smooth:
        nan = np.full((t, n), np.nan)
        if not cfg.uncertainty:  # skipped: NaN deviations, structural observability
            return replace(result, **_fields(model, nan, structural_observable(prob), nan, nan))
        if moments is None:
            moments = frame_moments(prob, result)
        std, observable = frame_uncertainty(prob, moments)
        return replace(result, **_fields(model, std, observable, nan, nan))
    fps = check_fps(fps)
    if t < MIN_FRAMES:
        raise ConfigError(
            f"SolverConfig.temporal: 'smooth' needs at least {MIN_FRAMES} frames, the "
            f"sequence has {t}; use temporal='none' for shorter ones"
        )
    if moments is None:
        moments = frame_moments(prob, result)
    std, observable = frame_uncertainty(prob, moments)
    scale = float(np.sqrt(prob.angle_floor))
    sigma = coordinate_noise(
        model.angular, nr, cfg.temporal_noise, cfg.temporal_position_noise, scale
    )
    wrap = np.zeros(n, bool)
    wrap[nr + np.asarray(model.free_angles, int)] = True
    unit = np.concatenate(
        [np.r_[np.full(3, scale), np.ones(3)][:nr], np.where(model.angular, 1.0, scale)]
    )
    z = np.zeros((t, n))
    if nr:
        z[:, :3] = result.root_position
    z[:, nr:] = result.dof_value
    quat = np.asarray(result.root_orientation, np.float64) if nr else None
    angular = np.concatenate([np.arange(6)[:nr] >= 3, np.asarray(model.angular, bool)])
    sm = smooth_coordinates(
        z, quat, std**2, sigma, 1.0 / fps, wrap, unit, angular, fit=cfg.temporal_noise_fit
    )
    out = _pose_result(prob, result, sm)
    fields = _fields(model, sm.std, observable, sm.velocity * fps, sm.acceleration * fps**2)
    return replace(out, **fields)
