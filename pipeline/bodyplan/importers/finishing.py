"""What every importer shares: the conversion warning, content sniffing, the last step to a plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.bodyplan.importers._build import PlanBuilder
from pipeline.bodyplan.model import BodyPlan
from pipeline.bodyplan.parse import parse_plan
from pipeline.tracks.schema import check_up_axis

__all__ = [
    "PLAN_FORMAT_UP_AXES",
    "ConversionWarning",
    "finish_plan",
    "head",
    "plan_unit",
    "plan_up_axis",
    "starts_with",
]

#: Up axis of a body plan by the format it was imported from (``x-source.format``), used
#: when the plan does not say its own (``x-up-axis``): the formats' conventions.
PLAN_FORMAT_UP_AXES: dict[str, str] = {"osim": "y", "bvh": "y", "mjcf": "z", "urdf": "z"}


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


def plan_up_axis(plan: BodyPlan) -> str | None:
    """The plan's up axis: its ``x-up-axis``, else its source format's convention.

    Importers write ``x-up-axis`` (OpenSim ``"y"``, MJCF and URDF ``"z"``); a plan
    imported before they did falls back on :data:`PLAN_FORMAT_UP_AXES` by its
    ``x-source.format``; the mannequin says ``"y"``. A hand-written plan may add
    ``"x-up-axis": "z"`` (one of ``x, y, z, -x, -y, -z``).

    Returns
    -------
    str or None
        None when neither says (the plan's up axis is unknown).
    """
    extras = plan.extras or {}
    declared = extras.get("x-up-axis")
    if declared is not None:
        return check_up_axis(declared, f"{plan.source or 'body plan'}: x-up-axis")
    source = extras.get("x-source")
    if isinstance(source, Mapping):
        return PLAN_FORMAT_UP_AXES.get(str(source.get("format", "")).lower())
    return None


def head(path: str | Path, size: int = 4096) -> str:
    """The file's first ``size`` bytes as text (empty when unreadable)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def starts_with(path: str | Path, prefix: str) -> bool:
    """True when the file's first element (past an XML declaration and comments) is ``prefix``."""
    text = head(path).lstrip("\ufeff \t\r\n")
    while text.startswith(("<?", "<!--")):
        end = text.find("?>" if text.startswith("<?") else "-->")
        if end < 0:
            break
        text = text[end + (2 if text.startswith("<?") else 3) :].lstrip()
    return text.startswith(prefix)
