"""Errors and warnings raised while loading a body plan."""

from __future__ import annotations

from pipeline.errors import BodyPlanError

__all__ = ["BodyPlanError", "UnobservableDofWarning"]


class UnobservableDofWarning(UserWarning):
    """A DOF has no keypoint below it (its joint has no child), so no data can fit it."""
