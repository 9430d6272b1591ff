"""What every importer shares: the conversion warning and the last step to a plan."""

from __future__ import annotations

import dataclasses
from typing import Any

from pipeline.bodyplan.importers._build import PlanBuilder
from pipeline.bodyplan.model import BodyPlan
from pipeline.bodyplan.parse import parse_plan

__all__ = ["ConversionWarning", "finish_plan", "plan_unit"]


class ConversionWarning(UserWarning):
    """An importer kept something of the source model only approximately, or dropped it.

    The message names the file, the element (joint, coordinate, mimic or equality) and
    what the importer did instead; the same facts are recorded in the plan's
    ``x-source``.
    """


def finish_plan(
    builder: PlanBuilder,
    fixed_base: bool,
    name: str | None,
    extras: dict[str, Any],
    file: str,
) -> BodyPlan:
    """Validate the builder's joints through the body-plan parser and attach ``extras``.

    Parameters
    ----------
    builder : PlanBuilder
    fixed_base : bool
    name : str or None
        ``x-name`` of the plan.
    extras : dict
        Top-level ``x-`` keys (``x-source``, ``x-unit``); must be JSON-serializable.
    file : str
        Name used in messages and kept as :attr:`BodyPlan.source`.

    Returns
    -------
    BodyPlan
    """
    data = builder.plan_dict(fixed_base, name, extras)
    plan = parse_plan(data, file)
    if getattr(plan, "unit", None) is not None:  # the plan's own unit field holds it
        extras = {k: v for k, v in extras.items() if k != "x-unit"}
    return dataclasses.replace(plan, extras=extras)


def plan_unit(plan: BodyPlan) -> str | None:
    """The plan's length unit: its ``unit`` field, else its ``x-unit`` extra."""
    return getattr(plan, "unit", None) or (plan.extras or {}).get("x-unit")
