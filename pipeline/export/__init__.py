"""Exporters of fitted motion: Kimodo constraints (:mod:`pipeline.export.kimodo`)."""
