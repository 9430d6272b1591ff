"""Exporters of fitted motion, in one table that the CLI, the config and the flows read.

The table is :mod:`pipeline.export.exporter_registry` (``outputs.exports`` names its rows).

CSV, BVH, OpenSim ``.trc`` / ``.mot``, NWB, engine ``qpos``, movement datasets
(:func:`export` runs any of them over a fit store, atomically, with a fingerprint record),
and Kimodo constraints (:mod:`pipeline.export.kimodo`, its own entry point).
"""

from pipeline.export.exporter_registry import AUTOMATIC_EXPORTS, EXPORT_NAMES, EXPORTERS, export

__all__ = ["AUTOMATIC_EXPORTS", "EXPORTERS", "EXPORT_NAMES", "export"]
