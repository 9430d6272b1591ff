"""Body plans: the kinematic tree format (QuickIK's JSON, plus version-2 joint kinds).

The format is documented by ``bodyplan.schema.json`` (shipped in this package); the
loader (:func:`load_body_plan`) explains what is wrong with a bad file.
"""

from pipeline.bodyplan.errors import BodyPlanError, UnobservableDofWarning
from pipeline.bodyplan.io import (
    body_plan_sha256,
    body_plan_to_dict,
    load_body_plan,
    save_body_plan,
)
from pipeline.bodyplan.mannequin import mannequin
from pipeline.bodyplan.model import KINDS, BodyPlan, Dof, Joint, JointKind

__all__ = [
    "KINDS",
    "BodyPlan",
    "BodyPlanError",
    "Dof",
    "Joint",
    "JointKind",
    "UnobservableDofWarning",
    "body_plan_sha256",
    "body_plan_to_dict",
    "load_body_plan",
    "mannequin",
    "save_body_plan",
]
