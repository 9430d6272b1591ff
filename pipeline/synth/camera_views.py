"""Synthetic camera views of a synthetic session: pixels, occlusions, outliers, DLC files.

:func:`render_views` projects known 3D keypoints through calibrated cameras (lens
distortion included) and degrades them like a 2D tracker would: pixel noise, per-view
occlusion runs (and keypoint-frames that only one camera sees), outliers with low
confidence, points outside the image or behind the camera missing. :func:`write_dlc_csv`
writes one view as a DeepLabCut 2D predictions CSV (``x, y, likelihood``), the file a
lab would have per camera.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pipeline.cameras import Camera, pack, project

__all__ = ["ViewsConfig", "render_views", "write_dlc_csv"]


class ViewsConfig(NamedTuple):
    """How the synthetic detections are degraded.

    Attributes
    ----------
    noise_px : float
        Standard deviation of Gaussian pixel noise.
    occlusion : float
        Fraction of keypoint-frames each view misses, in runs of ``occlusion_run`` frames.
    occlusion_run : int
    single_view : float
        Fraction of keypoint-frames seen by one camera only (the others miss them).
    outliers : float
        Fraction of detections displaced by ``outlier_px`` in a random direction (with a
        confidence drawn from 0.3-0.7, like a tracker's confused detections).
    outlier_px : float
    """

    noise_px: float = 2.0
    occlusion: float = 0.1
    occlusion_run: int = 8
    single_view: float = 0.05
    outliers: float = 0.01
    outlier_px: float = 60.0


def render_views(
    points: np.ndarray,
    cameras: Sequence[Camera],
    config: ViewsConfig,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy detections of world keypoints in every camera.

    Parameters
    ----------
    points : (T, J, 3) array
        World keypoints (the cameras' extrinsics unit).
    cameras : sequence of Camera
    config : ViewsConfig
    rng : numpy.random.Generator

    Returns
    -------
    pixels : (T, C, J, 2) array
        Detections, NaN where missing (occluded, outside the image, behind the camera).
    confidence : (T, C, J) array
        0.8-1.0 for good detections, 0.3-0.7 for outliers, 0 where missing.
    """
    t, j, _ = points.shape
    c = len(cameras)
    clean = project(pack(cameras), points[:, :, None, :]).transpose(0, 2, 1, 3)  # (T, C, J, 2)
    pixels = clean + rng.normal(0.0, config.noise_px, clean.shape)
    conf = rng.uniform(0.8, 1.0, (t, c, j))
    hit = rng.random((t, c, j)) < config.outliers
    angle = rng.uniform(0, 2 * np.pi, int(hit.sum()))
    pixels[hit] += config.outlier_px * np.column_stack([np.cos(angle), np.sin(angle)])
    conf[hit] = rng.uniform(0.3, 0.7, int(hit.sum()))
    missing = np.zeros((t, c, j), bool)
    run = max(int(config.occlusion_run), 1)
    starts = rng.random((t, c, j)) < config.occlusion / run
    for k in range(min(run, t)):  # a session shorter than a run: runs cut at its end
        missing[k:] |= starts[: t - k]
    single = rng.random((t, j)) < config.single_view
    keep = rng.integers(0, c, (t, j))
    others = single[:, None, :] & (np.arange(c)[None, :, None] != keep[:, None, :])
    missing |= others
    size = np.array([cam.size for cam in cameras], dtype=np.float64)[None, :, None, :]
    outside = ~np.isfinite(clean).all(-1) | (clean < 0).any(-1) | (clean >= size).any(-1)
    missing |= outside
    pixels[missing] = np.nan
    conf[missing] = 0.0
    return pixels, conf


def write_dlc_csv(
    path: str | Path,
    pixels: np.ndarray,
    confidence: np.ndarray,
    keypoints: Sequence[str],
    scorer: str = "DLC_resnet50_synthetic",
) -> Path:
    """Write one view's detections as a DeepLabCut single-animal 2D predictions CSV.

    Parameters
    ----------
    path : str or Path
    pixels : (T, J, 2) array
        NaN where missing (written as empty cells, as DeepLabCut's labeled data).
    confidence : (T, J) array
        Written as ``likelihood``.
    keypoints : sequence of str
    scorer : str

    Returns
    -------
    Path
    """
    path = Path(path)
    n = len(keypoints)
    lines = [
        ",".join(["scorer"] + [scorer] * 3 * n),
        ",".join(["bodyparts"] + [k for k in keypoints for _ in range(3)]),
        ",".join(["coords"] + ["x", "y", "likelihood"] * n),
    ]

    def cell(v: float) -> str:
        return "" if not np.isfinite(v) else repr(float(v))

    for f in range(pixels.shape[0]):
        row = [str(f)]
        for k in range(n):
            x, y = pixels[f, k]
            seen = np.isfinite(x) and np.isfinite(y)
            row += [cell(x), cell(y), cell(confidence[f, k]) if seen else ""]
        lines.append(",".join(row))
    path.write_text("\n".join(lines) + "\n")
    return path
