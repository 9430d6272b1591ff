"""Keypoint tracks: the movement poses schema, readers, and the keypoint-to-joint map."""

from pipeline.tracks.registry import READER_MODULES, read_tracks, readers
from pipeline.tracks.schema import TracksError, make_tracks_dataset, validate_tracks

__all__ = [
    "READER_MODULES",
    "TracksError",
    "make_tracks_dataset",
    "read_tracks",
    "readers",
    "validate_tracks",
]
