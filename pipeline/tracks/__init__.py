"""Keypoint tracks: the movement poses schema, readers, and the keypoint-to-joint map.

The registry's ``readers()`` is imported from :mod:`pipeline.tracks.reader_registry`: here the
name ``readers`` is the package of reader modules (:mod:`pipeline.tracks.readers`).
"""

from pipeline.tracks.reader_registry import READER_MODULES, read_tracks
from pipeline.tracks.schema import TracksError, make_tracks_dataset, validate_tracks

__all__ = [
    "READER_MODULES",
    "TracksError",
    "make_tracks_dataset",
    "read_tracks",
    "validate_tracks",
]
