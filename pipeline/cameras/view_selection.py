"""Which views of a keypoint a fit believes: the cameras that agree, as Pose2Sim keeps them.

A 2D estimator run on each camera alone sometimes puts a keypoint on the wrong limb in
one view (a left hip found on the right in a side view) or far off it. Pose2Sim's
triangulation (``triangulation_from_best_cameras``) leaves such views out before it
triangulates, and :func:`best_views` does the same per frame and keypoint:

1. detections under ``min_confidence`` do not count;
2. the views left are triangulated (:func:`pipeline.cameras.triangulate`, confidence-
   weighted DLT) and the error is the mean over them of the reprojection distance
   (pixels);
3. while the smallest error is above ``max_error`` and at least ``min_views`` cameras
   would remain, one more camera is left out: every choice of it (then of two, ...), the
   lowest error kept;
4. a keypoint whose best error stays above ``max_error`` is left out of that frame
   altogether (Pose2Sim writes it as missing).

On Pose2Sim's demo (4 cameras, its ``Config.toml``: 15 px, likelihood 0.3, 2 cameras)
the kept views triangulate to Pose2Sim's own ``.trc`` within 0.1 mm median. A fit through
the cameras (:class:`pipeline.fit.view_setup.ViewSetup`) weighs the views left out 0; the
tracks store keeps every detection and states the rule in its ``view_selection`` attr.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pipeline.cameras.camera import Camera
from pipeline.cameras.lens_projection import pack, project
from pipeline.cameras.triangulate import triangulate
from pipeline.errors import ConfigError

__all__ = ["ViewSelection", "best_views"]


@dataclass(frozen=True)
class ViewSelection:
    """Pose2Sim's rule for the views a keypoint is triangulated from (module docstring).

    Attributes
    ----------
    max_error : float
        Largest mean reprojection error (px) of a kept set of views
        (``reproj_error_threshold_triangulation``).
    min_confidence : float
        Detections below it count as missing (``likelihood_threshold_triangulation``).
    min_views : int
        Fewest cameras a set may keep, at least 2 (``min_cameras_for_triangulation``).
    """

    max_error: float
    min_confidence: float = 0.0
    min_views: int = 2

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_error) and self.max_error > 0):
            raise ConfigError(
                f"view_max_error: must be a positive number of pixels, not {self.max_error!r}"
            )
        if not (math.isfinite(self.min_confidence) and self.min_confidence >= 0):
            raise ConfigError(
                f"view_min_confidence: must be a number >= 0, not {self.min_confidence!r}"
            )
        if (
            isinstance(self.min_views, bool)
            or int(self.min_views) != self.min_views
            or self.min_views < 2
        ):
            raise ConfigError(f"view_min_views: must be an integer >= 2, not {self.min_views!r}")

    def to_dict(self) -> dict[str, Any]:
        """The rule as a store attr (JSON)."""
        return asdict(self)

    @classmethod
    def from_attrs(cls, value: Any, source: str) -> ViewSelection | None:
        """The rule a tracks store's ``view_selection`` attr states (None: no rule).

        Raises
        ------
        ConfigError
            The attr is not a mapping of this class's fields, or a value is out of range.
        """
        if value is None:
            return None
        if not isinstance(value, Mapping) or set(value) - {
            "max_error",
            "min_confidence",
            "min_views",
        }:
            raise ConfigError(
                f"{source}: attrs.view_selection = {value!r}: expected max_error, "
                "min_confidence and min_views"
            )
        try:
            return cls(
                float(value["max_error"]),
                float(value.get("min_confidence", 0.0)),
                int(value.get("min_views", 2)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: attrs.view_selection = {value!r}: {exc}") from exc


def best_views(
    cameras: Sequence[Camera], pixels: np.ndarray, weights: np.ndarray, rule: ViewSelection
) -> np.ndarray:
    """The views each point keeps under ``rule`` (module docstring).

    Parameters
    ----------
    cameras : sequence of Camera
        The ``C`` cameras, in view order.
    pixels : (..., C, 2) array
        Detections (distorted pixels); NaN where missing.
    weights : (..., C) array
        Detection weights (confidences); 0 where missing.
    rule : ViewSelection

    Returns
    -------
    (..., C) bool array
        True for the views a point keeps; a point whose best set misses ``max_error``
        keeps none.
    """
    pixels = np.asarray(pixels, np.float64)
    weights = np.asarray(weights, np.float64)
    n = pixels.shape[-2]
    lead = pixels.shape[:-2]
    usable = (weights > 0) & (weights >= rule.min_confidence) & np.isfinite(pixels).all(-1)
    w = np.where(usable, weights, 0.0)
    packed = pack(cameras)
    best = np.full(lead, np.inf)
    keep = np.zeros(lead + (n,), bool)
    settled = np.zeros(lead, bool)
    for off in range(n - rule.min_views + 1):
        error = np.full(lead, np.inf)
        chosen = np.zeros(lead + (n,), bool)
        for out in itertools.combinations(range(n), off):
            used = usable.copy()
            used[..., list(out)] = False
            enough = used.sum(-1) >= 2
            if not enough.any():
                continue
            points = triangulate(packed, pixels, np.where(used, w, 0.0))
            reproj = project(packed, points[..., None, :])
            distance = np.where(used, np.linalg.norm(reproj - pixels, axis=-1), 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = distance.sum(-1) / used.sum(-1)
            mean = np.where(enough & np.isfinite(mean), mean, np.inf)
            better = mean < error
            error = np.where(better, mean, error)
            chosen = np.where(better[..., None], used, chosen)
        take = ~settled & (error < best)
        best = np.where(take, error, best)
        keep = np.where(take[..., None], chosen, keep)
        settled |= best <= rule.max_error
        if settled.all():
            break
    return keep & (best <= rule.max_error)[..., None]
