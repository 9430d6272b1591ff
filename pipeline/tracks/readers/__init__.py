"""Tracks readers, one module per format (see :mod:`pipeline.tracks.reader_registry`)."""
