"""The ``body_plan`` setting of run configs and commands: ``"mannequin"`` or a file."""

from __future__ import annotations

import os

from pipeline.bodyplan.io import load_body_plan
from pipeline.bodyplan.mannequin import mannequin
from pipeline.bodyplan.model import BodyPlan

__all__ = ["resolve_body_plan"]


def resolve_body_plan(spec: str | os.PathLike[str]) -> BodyPlan:
    """A ``body_plan`` setting as a plan: the built-in ``"mannequin"``, or a file.

    The run config's, the CLI's and the flows' one reading of the setting.

    Parameters
    ----------
    spec : str or PathLike
        ``"mannequin"``, or a file :func:`~pipeline.bodyplan.load_body_plan` reads (JSON,
        MJCF, URDF, OpenSim, BVH).

    Returns
    -------
    BodyPlan

    Raises
    ------
    BodyPlanError
        The file is missing or not a usable body plan.
    """
    return mannequin() if str(spec) == "mannequin" else load_body_plan(spec)
