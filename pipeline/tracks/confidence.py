"""The confidence-to-weight rule: how much each observed keypoint counts in a fit.

Trackers give a confidence per keypoint and frame (DeepLabCut's likelihood, SLEAP's
score); motion capture gives none (NaN). The fit, the multi-camera fit and the subject
calibration weight a keypoint's residual by :func:`confidence_weights` of it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["confidence_weights"]


def confidence_weights(
    confidence: np.ndarray, targets: np.ndarray, min_confidence: float = 0.0
) -> np.ndarray:
    """Weights of observed keypoints from their confidence.

    A keypoint is observed when every coordinate of its position is finite. An observed
    keypoint weighs its confidence (negative confidences count as 0), or 1 when the
    confidence is NaN (a file without confidences); below ``min_confidence`` it weighs 0.
    A keypoint that is not observed weighs 0 whatever its confidence.

    Parameters
    ----------
    confidence : (...) array
        Confidence per keypoint (any leading shape, e.g. ``(T, K)`` or ``(T, V, K)``);
        NaN: unknown.
    targets : (..., D) array
        Positions with the same leading shape and the coordinates last (``D`` = 2 or 3);
        NaN marks a missing keypoint.
    min_confidence : float
        Confidences below it give weight 0 (0: every observed keypoint counts). Unknown
        (NaN) confidences always count as 1.

    Returns
    -------
    (...) float64 array
        The weights, >= 0.
    """
    confidence = np.asarray(confidence, dtype=np.float64)
    observed = np.isfinite(targets).all(axis=-1)
    weight = np.where(np.isnan(confidence), 1.0, np.clip(confidence, 0.0, None))
    if min_confidence > 0:
        weight = np.where(confidence < min_confidence, 0.0, weight)
    return np.where(observed, weight, 0.0)
