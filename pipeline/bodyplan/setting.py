"""The ``body_plan`` setting of run configs and commands: a shipped plan's name or a file."""

from __future__ import annotations

import os

from pipeline.bodyplan.io import load_body_plan
from pipeline.bodyplan.library import SHIPPED, shipped_plan
from pipeline.bodyplan.model import BodyPlan

__all__ = ["resolve_body_plan"]


def resolve_body_plan(spec: str | os.PathLike[str]) -> BodyPlan:
    """A ``body_plan`` setting as a plan: a shipped plan (``"mannequin"``, ...), or a file.

    The run config's, the CLI's and the flows' one reading of the setting.

    Parameters
    ----------
    spec : str or PathLike
        A name of :data:`pipeline.bodyplan.library.SHIPPED` (``"mannequin"``,
        ``"mouse_topdown"``, ``"plugin_gait"``, ...), or a file
        :func:`~pipeline.bodyplan.load_body_plan` reads (JSON, MJCF, URDF, OpenSim, BVH).

    Returns
    -------
    BodyPlan

    Raises
    ------
    BodyPlanError
        The file is missing or not a usable body plan.
    """
    if str(spec) in SHIPPED and not os.path.exists(spec):
        return shipped_plan(str(spec))
    return load_body_plan(spec)
