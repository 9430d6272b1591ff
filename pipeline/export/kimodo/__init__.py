"""The Kimodo bridge: fitted motion out as constraints, constraints in as IK targets.

Kimodo (NVIDIA's text- and constraint-driven motion generator) reads a JSON array of
constraints (root paths, full-body keyframes, hand/foot and end-effector keyframes) on
one of its skeletons. This package

- builds a body plan whose forward kinematics is Kimodo's (:func:`kimodo_body_plan`),
- writes a fit store as a constraints file and ``meta.json`` (:func:`export_kimodo`),
- reads a constraints file as IK targets in the tracks schema (:func:`read_constraints`;
  also the ``kimodo`` tracks reader), validating it beyond Kimodo's own loader.

Conventions and the file format: ``KIMODO.md`` (shared docs) and the skeletons JSON the
user passes.
"""

from pipeline.export.kimodo.constraints import Constraints, Entry, KimodoWarning
from pipeline.export.kimodo.errors import KimodoError
from pipeline.export.kimodo.export import ExportConfig, ExportReport, FrameSpec, export_kimodo
from pipeline.export.kimodo.names import NAME_MAPS, keypoint_map, name_map
from pipeline.export.kimodo.skeleton import KimodoSkeleton, kimodo_body_plan, load_kimodo_skeleton
from pipeline.export.kimodo.targets import constraint_targets, load_constraints
from pipeline.export.kimodo.targets import read as read_constraints

__all__ = [
    "NAME_MAPS",
    "Constraints",
    "Entry",
    "ExportConfig",
    "ExportReport",
    "FrameSpec",
    "KimodoError",
    "KimodoSkeleton",
    "KimodoWarning",
    "constraint_targets",
    "export_kimodo",
    "keypoint_map",
    "kimodo_body_plan",
    "load_constraints",
    "load_kimodo_skeleton",
    "name_map",
    "read_constraints",
]
