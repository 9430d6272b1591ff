"""Compare kinefit's tracks with a dataset loaded by movement (optional interop extra)."""

from __future__ import annotations

import numpy as np
import xarray as xr

PLURAL = {"keypoints": "keypoint", "individuals": "individual"}


def assert_same_tracks(ours: xr.Dataset, theirs: xr.Dataset, *, individuals: bool = True) -> None:
    """Assert equal positions and confidences, matching keypoints by name.

    movement may use the plural dim names, and some of its loaders sort keypoints or name
    the single individual differently; ``individuals=False`` compares them by position.
    """
    theirs = theirs.rename({k: v for k, v in PLURAL.items() if k in theirs.dims})
    assert sorted(map(str, theirs.keypoint.values)) == sorted(map(str, ours.keypoint.values))
    if individuals:
        assert list(map(str, theirs.individual.values)) == list(map(str, ours.individual.values))
    theirs = theirs.assign_coords(individual=ours.individual.values)
    for name in ("position", "confidence"):
        mine = ours[name]
        other = theirs[name].transpose(*mine.dims).sel(keypoint=mine.keypoint.values)
        np.testing.assert_allclose(mine.values, other.values, rtol=1e-6, equal_nan=True)
