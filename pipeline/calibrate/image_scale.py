"""The image scale of a single-view 2D session, estimated from its pixels.

A single-view fit (:class:`pipeline.solve.XYView`) puts the image on the world's XY plane
with ``image_scale`` body-plan length units per pixel. That scale is calibrated here
through the same projection, on well-observed, diverse frames
(:func:`pipeline.calibrate.choose_frames`):

1. the poses and the plan's global scale ``g`` are solved jointly
   (:func:`pipeline.calibrate.solve_shape` with the image-plane mapper, no prior on
   ``g``) on the pixels times a first guess ``s0`` (the plan's neutral extent over the
   pixels' extent): a body ``g`` times the plan's size fitting pixels times ``s0`` is
   about the plan fitting pixels times ``s0 / g``, so ``s0 / g`` is the seed (solved
   again from it while ``g`` moves by more than 2 %; its covariance gives the standard
   error);
2. "about", because the plan's slide limits and DOF prior do not scale with ``g``: the
   seed is refined on the fit's own objective, the weighted mean squared pixel residual
   of :func:`pipeline.solve.solve_frames` at ``image_scale = s`` (the plan as it is),
   scanned over ``s`` from half to twice the seed, refined by a parabola in ``log s``
   through the lowest three points (the scan moves on if the lowest is at an end), then
   once more on five points within 8 % of it. The estimate minimises the fit's pixel
   residuals over the scale.

What one view cannot tell: depth. The scale is the body's size in the image plane; how
far the animal is from the camera, and any tilt out of the image plane, are not observed
(a tilted body looks shorter), so the estimate is the scale of a body that lies in the
image plane at its neutral proportions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import xarray as xr

from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.frame_selection import choose_frames
from pipeline.calibrate.params import resolve
from pipeline.calibrate.solve import solve_shape
from pipeline.calibrate.spec import CalibrationSpec, PriorWeights
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.solve import SolverConfig, XYView, solve_frames
from pipeline.tracks.confidence import confidence_weights
from pipeline.tracks.mapping import KeypointMapping

__all__ = ["DEPTH_NOTE", "ImageScale", "estimate_image_scale", "session_image_scale"]

#: What the estimate cannot know, recorded beside it.
DEPTH_NOTE = (
    "one view: depth is unobservable; the scale is the body's size in the image plane "
    "(a body tilted out of it looks smaller)"
)
#: Calibration frames the estimate uses at most.
N_FRAMES = 150


@dataclass(frozen=True)
class ImageScale:
    """An estimated image scale.

    Attributes
    ----------
    value : float
        Body-plan length units per pixel.
    std : float
        Its standard error (same unit), from the joint solve's covariance.
    frames : int
        Frame-individuals the estimate used.
    rms_px : float
        Mean per-frame RMS pixel residual of those frames at the estimate.
    converged : bool
    note : str
        :data:`DEPTH_NOTE`.
    """

    value: float
    std: float
    frames: int
    rms_px: float
    converged: bool
    note: str = DEPTH_NOTE

    def to_dict(self) -> dict[str, object]:
        """Plain JSON (the fit store's ``image_scale_estimate`` attr)."""
        return asdict(self)


def _first_guess(plan: BodyPlan, pixels: np.ndarray, seen: np.ndarray) -> float:
    """Plan length per pixel from extents: the neutral mapped joints' over the pixels'."""
    joints = np.flatnonzero(seen.any(axis=0))
    rest = np.asarray(forward_kinematics(plan, np.asarray(plan.neutral)), np.float64)[joints]
    plan_extent = float(np.max(np.linalg.norm(rest[:, None] - rest[None], axis=-1)))
    pix = np.where(seen[..., None], pixels, np.nan)[:, joints]
    spread = np.linalg.norm(pix[:, :, None] - pix[:, None], axis=-1)  # (N, Jm, Jm)
    spread = np.where(np.isfinite(spread), spread, 0.0).max(axis=(1, 2))
    pix_extent = float(np.percentile(spread[spread > 0], 90)) if np.any(spread > 0) else 0.0
    if plan_extent <= 0 or pix_extent <= 0:
        return 1.0
    return plan_extent / pix_extent


def estimate_image_scale(
    plan: BodyPlan,
    pixels: np.ndarray,
    weights: np.ndarray,
    config: SolverConfig | None = None,
    *,
    n_frames: int = N_FRAMES,
) -> ImageScale | None:
    """Estimate the image scale from one view's pixels (see the module docstring).

    Parameters
    ----------
    plan : BodyPlan
    pixels : (N, J, 2) array
        Pixels of the plan's joints (x right, y down), NaN where missing; frames of all
        individuals laid end to end.
    weights : (N, J) array
        Observation weights (confidences), 0 where missing.
    config : SolverConfig, optional
        The pose solver's settings (the fit's).
    n_frames : int
        Calibration frames at most.

    Returns
    -------
    ImageScale or None
        None when no frame observes two joints apart (nothing to measure a size on).
    """
    config = config or SolverConfig()
    pixels = np.asarray(pixels, np.float64)
    weights = np.asarray(weights, np.float64)
    seen = np.isfinite(pixels).all(axis=-1) & (np.nan_to_num(weights) > 0)
    pairs = seen.sum(axis=1) >= 2
    if not pairs.any():
        return None
    pixels, weights, seen = pixels[pairs], weights[pairs], seen[pairs]
    pix = np.where(seen[..., None], pixels, np.nan)
    frames = choose_frames([pix], n_frames, min_frames=1, min_observed=0.5).frames[0]
    targets, w = pix[frames], np.where(seen[frames], weights[frames], 0.0)
    seed = _joint_seed(plan, targets, w, config, _first_guess(plan, pixels, seen))
    if seed is None:
        return None
    value, std, converged = seed

    def cost(scale: float) -> float:  # the fit's mean squared pixel residual at ``scale``
        fit = solve_frames(plan, targets * scale, w, config, mapper=XYView())
        e2 = np.sum((np.asarray(fit.fitted_position)[..., :2] / scale - targets) ** 2, axis=-1)
        return float(np.sum(np.where(w > 0, w * np.nan_to_num(e2), 0.0)) / np.sum(w))

    grid = value * np.geomspace(0.5, 2.0, 9)
    costs = np.array([cost(g) for g in grid])
    for _ in range(3):  # the minimum at an end: move the scan that way
        k = int(np.argmin(costs))
        if 0 < k < len(grid) - 1:
            break
        step = grid[1] / grid[0]
        more = grid[-1] * step ** np.arange(1, 5) if k else grid[0] / step ** np.arange(4, 0, -1)
        grid = np.concatenate([grid, more]) if k else np.concatenate([more, grid])
        costs = np.concatenate(
            [costs, [cost(g) for g in more]] if k else [[cost(g) for g in more], costs]
        )
    best = _vertex(grid, costs)
    fine = best * np.geomspace(0.92, 1.08, 5)  # again, closer: the curve is not a parabola
    best = _vertex(fine, np.array([cost(g) for g in fine]))
    rms = float(np.sqrt(cost(best)))
    return ImageScale(best, std * best / value, int(frames.size), rms, converged)


def _vertex(grid: np.ndarray, costs: np.ndarray) -> float:
    """Lowest point of the parabola in ``log grid`` through the lowest three costs."""
    k = int(np.clip(np.argmin(costs), 1, len(grid) - 2))
    a, b, _ = np.polyfit(np.log(grid[k - 1 : k + 2]), costs[k - 1 : k + 2], 2)
    best = float(np.exp(-b / (2 * a))) if a > 0 else float(grid[k])
    return float(np.clip(best, grid[k - 1], grid[k + 1]))


def _joint_seed(plan, targets, weights, config, s0) -> tuple[float, float, bool] | None:
    """Scale, standard error and convergence of the joint solve with the global scale."""
    spec = CalibrationSpec(segments=False, prior=PriorWeights(global_scale=0.0))
    params = resolve(plan, spec, size=1.0)
    scale = s0
    for _ in range(4):
        sol = solve_shape(params, targets * scale, weights, config, mapper=XYView())
        g = float(sol.theta[0])
        if not (np.isfinite(g) and g > 0):
            return None
        scale /= g
        if abs(g - 1) < 0.02:
            break
    std = scale * float(np.sqrt(max(sol.covariance[0, 0], 0.0))) / g
    return scale, std, bool(sol.converged)


def session_image_scale(
    ds: xr.Dataset,
    plan: BodyPlan,
    mapping: KeypointMapping,
    config: SolverConfig | None = None,
    *,
    n_frames: int = N_FRAMES,
) -> ImageScale | None:
    """:func:`estimate_image_scale` of a single-view 2D tracks dataset, every individual.

    Reads at most ``8 * n_frames`` evenly spaced frames per individual.
    """
    stride = max(ds.sizes["time"] // (8 * n_frames), 1)
    part = ds.isel(time=slice(None, None, stride))
    position = np.asarray(part["position"].transpose("individual", "time", "keypoint", "space"))
    conf = np.asarray(part["confidence"].transpose("individual", "time", "keypoint"))
    pix = mapping.gather(position, axis=2).reshape(-1, len(plan.joint_names), 2)
    weights = confidence_weights(mapping.gather(conf, axis=2).reshape(pix.shape[:2]), pix)
    return estimate_image_scale(plan, pix, weights, config, n_frames=n_frames)
