"""Body plans: the kinematic tree format (QuickIK's JSON, plus version-2 joint kinds).

The format is documented by ``bodyplan.schema.json`` (shipped in this package); the
loader (:func:`load_body_plan`) explains what is wrong with a bad file, and imports MJCF,
URDF, OpenSim and BVH models (:mod:`pipeline.bodyplan.importers`). Plans are edited with
:mod:`pipeline.bodyplan.editing`, mapped onto track keypoints by name with
:func:`propose_keypoint_map`, and an imported plan's poses convert to and from its source
engine's coordinates with :mod:`pipeline.bodyplan.engine_config`.
"""

from pipeline.bodyplan.editing import (
    combine,
    place,
    remove_joint,
    rename,
    without_limits,
)
from pipeline.bodyplan.engine_config import (
    EnginePose,
    from_engine_configuration,
    to_engine_configuration,
)
from pipeline.bodyplan.importers import (
    ConversionWarning,
    import_body_plan,
    plan_unit,
    plan_up_axis,
)
from pipeline.bodyplan.io import (
    body_plan_sha256,
    body_plan_to_dict,
    load_body_plan,
    save_body_plan,
)
from pipeline.bodyplan.keypoint_map import KeypointMapProposal, propose_keypoint_map
from pipeline.bodyplan.load_errors import BodyPlanError, UnobservableDofWarning
from pipeline.bodyplan.mannequin import mannequin
from pipeline.bodyplan.model import KINDS, BodyPlan, Dof, Joint, JointKind
from pipeline.bodyplan.rerooting import reroot
from pipeline.bodyplan.setting import resolve_body_plan

__all__ = [
    "KINDS",
    "BodyPlan",
    "BodyPlanError",
    "ConversionWarning",
    "Dof",
    "EnginePose",
    "Joint",
    "JointKind",
    "KeypointMapProposal",
    "UnobservableDofWarning",
    "body_plan_sha256",
    "body_plan_to_dict",
    "combine",
    "from_engine_configuration",
    "import_body_plan",
    "load_body_plan",
    "mannequin",
    "place",
    "plan_unit",
    "plan_up_axis",
    "propose_keypoint_map",
    "remove_joint",
    "rename",
    "reroot",
    "resolve_body_plan",
    "save_body_plan",
    "to_engine_configuration",
    "without_limits",
]
