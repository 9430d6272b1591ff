"""The Kimodo bridge: fitted motion out as constraints, constraints in as IK targets.

Kimodo (NVIDIA's text- and constraint-driven motion generator) reads a JSON array of
constraints (root paths, full-body keyframes, hand/foot and end-effector keyframes) on
one of its skeletons. This package

- builds a body plan whose forward kinematics is Kimodo's (:func:`kimodo_body_plan`),
- writes a fit store as a constraints file and ``meta.json`` (:func:`export_kimodo`),
- reads a constraints file as IK targets in the tracks schema (:func:`read_constraints`;
  also the ``kimodo`` tracks reader), validating it beyond Kimodo's own loader.

The Kimodo format, in the parts the modules here cite:

1. conventions: metres, radians, +Y up, facing +Z at heading 0 (:mod:`.skeleton`);
2. file layout: a JSON array of typed entries with frame indices, and ``meta.json``
   (:mod:`.constraints`, :mod:`.meta`);
3. skeletons, their rest pose and FK: ``G_j = G_p R_j``, ``p_j = p_p + G_p (rest_j -
   rest_p)``, rotations local to the rest pose (:mod:`.skeleton`, :mod:`.fk`);
4. what Kimodo's loader does with each entry, i.e. how a file becomes IK targets
   (:mod:`.targets`);
5. the write side: resampling to 30 fps, heading, and ``smooth_root`` (5.2, a
   second-difference least-squares fit of the pelvis track; :mod:`.motion`,
   :mod:`.smooth`);
6. the loader's validation, which :mod:`.constraints` goes beyond.

The skeletons JSON (joint names, parents, rest offsets) is the one the user passes.
"""

from pipeline.export.kimodo.constraints import Constraints, Entry, KimodoWarning
from pipeline.export.kimodo.export import ExportConfig, ExportReport, FrameSpec, export_kimodo
from pipeline.export.kimodo.kimodo_error import KimodoError
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
