"""Tracks readers, one module per format (see :mod:`pipeline.tracks.registry`)."""
