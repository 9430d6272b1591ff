"""File formats: the one contract every format kind registers through, and shared parsers.

:mod:`~pipeline.formats.contract` is how tracks readers, exporters, body-plan importers and
calibration readers declare a format and how each kind's registry picks one and checks its
options; :mod:`~pipeline.formats.bvh_parse` is the BVH text parser that the BVH tracks
reader and the BVH body-plan importer share.
"""
