"""What the viewer and the renderer show, as numpy: kept frames, skeletons, highlights.

Nothing here draws. :func:`viewer_frames` decides which frames a long session keeps (the
rule is stated on the page by :func:`decimation_note`), :func:`skeleton_paths` turns the
body plan's tree into polylines, and :func:`SessionFrames.load` reads only the kept frames
of the fit (and of the observed keypoints) and marks, per frame, the keypoints that are
missing, that miss by a large residual, and the joints with a DOF held at a limit.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.data.observation import image_scale, on_image_plane

__all__ = [
    "MAX_VIEWER_FRAMES",
    "SessionFrames",
    "decimation_note",
    "large_residual_threshold",
    "skeleton_edges",
    "skeleton_paths",
    "viewer_frames",
]

#: Most frames a viewer animates; longer sessions keep every k-th frame (and the worst).
MAX_VIEWER_FRAMES = 300
#: A residual is large above this many times the session's median residual ...
LARGE_RESIDUAL_MEDIANS = 5.0
#: ... and above this fraction of the body's extent.
LARGE_RESIDUAL_BODY = 0.01


def viewer_frames(n_frames: int, max_frames: int = MAX_VIEWER_FRAMES, keep: Sequence[int] = ()):
    """The frames a viewer animates: every ``step``-th frame, plus ``keep``.

    Parameters
    ----------
    n_frames : int
        Frames of the session.
    max_frames : int
        At most this many regular frames: ``step = ceil(n_frames / max_frames)``.
    keep : sequence of int
        Frames always kept (the report's worst frames), in range.

    Returns
    -------
    frames : numpy.ndarray of int
        Sorted, unique frame indices.
    step : int
        Frames between regular kept frames (1: every frame).
    """
    step = max(1, math.ceil(n_frames / max(int(max_frames), 1)))
    extra = [int(k) for k in keep if 0 <= int(k) < n_frames]
    return np.unique(np.r_[np.arange(0, n_frames, step), extra].astype(int)), step


def decimation_note(n_frames: int, step: int, n_kept: int, fps: float | None) -> str:
    """The decimation rule in words (shown under every viewer)."""
    if step == 1:
        return f"All {n_frames} frames are shown."
    rate = f" ({fps / step:.3g} Hz of {fps:.3g} Hz)" if fps else ""
    nth = {1: "st", 2: "nd", 3: "rd"}.get(step % 10 if step % 100 not in (11, 12, 13) else 0, "th")
    return (
        f"Long session: the viewer shows every {step}{nth} of {n_frames} frames{rate} plus the "
        f"worst frames, {n_kept} frames in all (at most {MAX_VIEWER_FRAMES} regular frames: "
        f"step = ceil(frames / {MAX_VIEWER_FRAMES})); the plots and tables use every frame."
    )


def skeleton_paths(plan: BodyPlan | None, names: Sequence[str]) -> np.ndarray:
    """The tree as polylines: joint indices into ``names``, ``-1`` between polylines.

    Each polyline runs from a joint down its first child's line; every further child
    starts a new polyline at its parent, so every bone is drawn exactly once.

    Returns
    -------
    numpy.ndarray of int
        Empty without a plan (markers only).
    """
    if plan is None:
        return np.zeros(0, dtype=int)
    index = {n: i for i, n in enumerate(names)}
    children: dict[str, list[str]] = {}
    roots = []
    for joint in plan.joints:
        if joint.name not in index:
            continue
        if joint.parent is None or joint.parent not in index:
            roots.append(joint.name)
        else:
            children.setdefault(joint.parent, []).append(joint.name)

    def chains(name: str) -> list[list[int]]:
        kids = children.get(name, [])
        if not kids:
            return [[index[name]]]
        out = chains(kids[0])
        out[0] = [index[name], *out[0]]
        for kid in kids[1:]:
            more = chains(kid)
            more[0] = [index[name], *more[0]]
            out += more
        return out

    flat: list[int] = []
    for root in roots:
        for line in chains(root):
            flat += [*line, -1]
    return np.asarray(flat[:-1], dtype=int)


def large_residual_threshold(residual: np.ndarray, fitted: np.ndarray) -> float:
    """The residual above which a keypoint is flagged (the residuals' unit).

    ``max(5 x median residual, 1 % of the body's extent)`` over the given frames;
    ``fitted`` (F, K, 3) must be in the residuals' unit (an image-plane fit's positions
    divided by its ``image_scale``).
    """
    finite = residual[np.isfinite(residual)]
    points = fitted.reshape(-1, 3)
    points = points[np.isfinite(points).all(axis=1)]
    extent = float(np.ptp(points, axis=0).max()) if len(points) else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        median = float(np.median(finite)) if finite.size else 0.0
    return max(LARGE_RESIDUAL_MEDIANS * median, LARGE_RESIDUAL_BODY * extent, 1e-12)


@dataclass(frozen=True)
class SessionFrames:
    """The kept frames of one individual, loaded.

    Attributes
    ----------
    frames : numpy.ndarray, shape (F,)
        Frame indices into the fit's ``time``.
    time : numpy.ndarray, shape (F,)
        Their time-coordinate values.
    fitted : numpy.ndarray, shape (F, K, 3)
        ``fitted_position`` (float32).
    observed : numpy.ndarray or None, shape (F, K, 3)
        Observed keypoints (NaN where missing); None when not given.
    missing : numpy.ndarray of bool, shape (F, K)
        Keypoints tracked somewhere in the session but not at this frame.
    large : numpy.ndarray of bool, shape (F, K)
        Residual above ``threshold``.
    at_limit : numpy.ndarray of bool, shape (F, K)
        Joints with a DOF the solver held at a limit (``limit_active``).
    threshold : float
        The large-residual threshold (the residuals' unit: the store's ``residual_unit``).
    """

    frames: np.ndarray
    time: np.ndarray
    fitted: np.ndarray
    observed: np.ndarray | None
    missing: np.ndarray
    large: np.ndarray
    at_limit: np.ndarray
    threshold: float

    @classmethod
    def load(
        cls,
        fit: xr.Dataset,
        individual: str,
        frames: np.ndarray,
        observed: xr.DataArray | None,
        plan: BodyPlan | None,
        threshold: float | None = None,
    ) -> SessionFrames:
        """Read the kept ``frames`` of ``individual`` (see the class attributes)."""
        one = fit.sel(individual=individual)
        names = [str(k) for k in fit["keypoint"].values]
        fitted = one["fitted_position"].isel(time=frames).transpose("time", "keypoint", "space")
        fitted = np.asarray(fitted.values, dtype=np.float32)
        n_frames, n_kp = fitted.shape[:2]
        residual = np.full((n_frames, n_kp), np.nan, dtype=np.float32)
        tracked = np.ones(n_kp, dtype=bool)
        if "residual" in fit.data_vars:
            res = one["residual"].transpose("time", "keypoint")
            residual = np.asarray(res.isel(time=frames).values, dtype=np.float32)
            tracked = np.asarray(res.notnull().any("time").values, dtype=bool)
        seen = None
        if observed is not None:
            obs = observed.sel(individual=individual).isel(time=frames)
            seen = np.asarray(obs.transpose("time", "keypoint", "space").values, np.float32)
            if seen.shape[-1] == 2:  # 2D tracks: drawn on the z = 0 plane
                seen = np.concatenate([seen, np.zeros_like(seen[..., :1])], axis=-1)
        missing = ~np.isfinite(residual) & tracked[None, :]
        if seen is not None:
            missing |= ~np.isfinite(seen).all(axis=-1) & tracked[None, :]
        if threshold is None:
            # the image plane's residuals are pixels, its positions plan lengths
            per_pixel = image_scale(fit) if on_image_plane(fit) else 1.0
            threshold = large_residual_threshold(residual, fitted / per_pixel)
        with np.errstate(invalid="ignore"):
            large = np.isfinite(residual) & (residual > threshold)
        at_limit = np.zeros((n_frames, n_kp), dtype=bool)
        if "limit_active" in fit.data_vars:
            active = one["limit_active"].transpose("time", "dof").isel(time=frames).values
            dof_names = [str(d) for d in fit["dof"].values]
            joint_of = _dof_joints(plan, dof_names, names)
            for d, k in enumerate(joint_of):
                if k >= 0:
                    at_limit[:, k] |= np.asarray(active[:, d], dtype=bool)
        time = np.asarray(fit["time"].values[frames], dtype=float)
        return cls(frames, time, fitted, seen, missing, large, at_limit, float(threshold))


def _dof_joints(plan: BodyPlan | None, dofs: list[str], names: list[str]) -> list[int]:
    """Index into ``names`` of each DOF's joint (-1: not a keypoint)."""
    index = {n: i for i, n in enumerate(names)}
    if plan is not None:
        owner = dict(zip(plan.dof_names, plan.dof_joint.tolist(), strict=True))
        return [index.get(plan.joints[owner[d]].name, -1) if d in owner else -1 for d in dofs]
    return [index.get(d.split("/")[0], -1) for d in dofs]


def skeleton_edges(plan: BodyPlan | None, names: Sequence[str]) -> list[tuple[int, int]]:
    """Parent-child index pairs into ``names`` of the plan's joints (none without a plan)."""
    if plan is None:
        return []
    index = {n: i for i, n in enumerate(names)}
    return [
        (index[j.parent], index[j.name])
        for j in plan.joints
        if j.parent is not None and j.parent in index and j.name in index
    ]
