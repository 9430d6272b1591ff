"""Zarr layouts of the tracks and fit stores, atomic publishing, fingerprints, resume."""

from pipeline.store.fit import FitStoreError, fitted_poses, open_fit
from pipeline.store.tracks import DEFAULT_CHUNK_FRAMES, open_tracks, write_tracks

__all__ = [
    "DEFAULT_CHUNK_FRAMES",
    "FitStoreError",
    "fitted_poses",
    "open_fit",
    "open_tracks",
    "write_tracks",
]
