"""Load, save and fingerprint body plans (QuickIK's JSON format, plus version-2 kinds)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.bodyplan.angles import angle_spec_to_dict
from pipeline.bodyplan.functions import function_to_dict
from pipeline.bodyplan.importers import guess_format, import_body_plan
from pipeline.bodyplan.kinds import kind_to_dict
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import DOF_TYPES_V1, BodyPlan, Dof, DrivenAxis, Joint
from pipeline.bodyplan.parse import parse_plan
from pipeline.errors import KinefitError
from pipeline.provenance.hashing import json_sha256
from pipeline.store.atomic import write_text_atomic

__all__ = [
    "body_plan_sha256",
    "body_plan_to_dict",
    "load_body_plan",
    "required_version",
    "save_body_plan",
]


def load_body_plan(
    path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
    *,
    source: str | None = None,
    format: str | None = None,
    **options: Any,
) -> BodyPlan:
    """Load and validate a body plan, or import a model file as one.

    Parameters
    ----------
    path_or_dict : str, PathLike or mapping
        A body-plan JSON file, or its already-decoded content, or a model file of another
        format (MJCF ``.xml``, URDF ``.urdf``, OpenSim ``.osim``, BVH ``.bvh``; picked by
        suffix and content, see :mod:`pipeline.bodyplan.importers`).
    source : str, optional
        Name used in error messages and kept as :attr:`BodyPlan.source`; defaults to the
        path (or ``"<dict>"``).
    format : {"json", "mjcf", "urdf", "osim", "bvh"}, optional
        Force a format instead of guessing it.
    **options
        Passed to the importer (e.g. ``sites=True`` for MJCF, ``strict=True``); none are
        accepted for JSON.

    Returns
    -------
    BodyPlan
        Axes and quaternions normalized, universal secondary axes orthogonalized, kinded
        joints' DOFs derived; :attr:`BodyPlan.version` is the lowest version the plan needs.

    Raises
    ------
    BodyPlanError
        File missing or not JSON (with line and column; a key repeated in one object is
        refused too), or any invalid field; one message
        naming the file, joint, DOF index, field and valid choices.

    Warns
    -----
    UnobservableDofWarning
        A joint with DOFs has no child, so nothing observes them.
    """
    if isinstance(path_or_dict, Mapping):
        return _keep_extras(parse_plan(path_or_dict, source or "<dict>"), path_or_dict)
    path = Path(os.fspath(path_or_dict))
    file = source or str(path)
    chosen = format or guess_format(path)
    if chosen != "json":
        return import_body_plan(path, format=chosen, **options)
    if options:
        raise BodyPlanError(file, f"options {sorted(options)} apply to imported formats, not JSON")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BodyPlanError(file, "file not found") from None
    except IsADirectoryError:
        raise BodyPlanError(file, "is a directory, not a body-plan JSON file") from None
    except UnicodeDecodeError as exc:
        raise BodyPlanError(file, f"not UTF-8 text ({exc.reason})") from None
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise BodyPlanError(
            file, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _DuplicateKeyError as exc:
        raise BodyPlanError(
            file, f"not valid JSON: key {exc.args[0]!r} appears twice in one object"
        ) from None
    return _keep_extras(parse_plan(data, file), data)


def _keep_extras(plan: BodyPlan, data: Any) -> BodyPlan:
    """Attach the top-level ``x-`` keys other than ``x-name`` as :attr:`BodyPlan.extras`."""
    if not isinstance(data, Mapping):
        return plan
    extras = {k: v for k, v in data.items() if str(k).startswith("x-") and k != "x-name"}
    return dataclasses.replace(plan, extras=extras) if extras else plan


class _DuplicateKeyError(KinefitError):
    """A repeated key in a JSON object (reported as a BodyPlanError by the loader)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build a JSON object, refusing repeated keys (json would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def required_version(plan: BodyPlan) -> int:
    """Lowest format version that can express ``plan``.

    3 with driven axes or couplings, else 2 if any joint has a kind or angles or the plan a
    calibration, else 1.
    """
    if plan.coupled:
        return 3
    if plan.calibration is not None:
        return 2
    return 2 if any(j.kind is not None or j.angles is not None for j in plan.joints) else 1


def _dof_to_dict(dof: Dof, joint: str, index: int) -> dict[str, Any]:
    if dof.type not in DOF_TYPES_V1:
        raise ValueError(
            f"joint {joint!r} dof {index}: type {dof.type!r} can only come from a 'kind'; "
            f"a dofs list holds {', '.join(DOF_TYPES_V1)}"
        )
    out: dict[str, Any] = {}
    if dof.name is not None:
        out["name"] = dof.name
    out["type"] = dof.type
    out["axis"] = list(dof.axis)
    out["neutral"] = dof.neutral
    out["limits"] = None if dof.limits is None else list(dof.limits)
    if dof.weight_scaler != 1.0:
        out["weight_scaler"] = dof.weight_scaler
    return out


def _driven_to_dict(axis: DrivenAxis) -> dict[str, Any]:
    return {
        "type": axis.type,
        "axis": list(axis.axis),
        "coordinate": axis.coordinate,
        "function": function_to_dict(axis.function),
    }


def _joint_to_dict(joint: Joint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": joint.name,
        "parent": joint.parent,
        "offset_pos": list(joint.offset_pos),
        "offset_quat": list(joint.offset_quat),
    }
    if joint.weight_scaler != 1.0:
        out["weight_scaler"] = joint.weight_scaler
    if joint.kind is not None:
        out.update(kind_to_dict(joint.kind))
    else:
        index = {id(d): i for i, d in enumerate(joint.dofs)}
        out["dofs"] = [
            _driven_to_dict(d)
            if isinstance(d, DrivenAxis)
            else _dof_to_dict(d, joint.name, index[id(d)])
            for d in joint.axes
        ]
    if joint.angles is not None:
        out["angles"] = angle_spec_to_dict(joint.angles)
    return out


def body_plan_to_dict(plan: BodyPlan) -> dict[str, Any]:
    """Return the JSON object of a plan, in the lowest version that expresses it.

    Version 1 output has no ``version`` key and only QuickIK's keys (valid QuickIK input);
    version 2 (3) output starts with ``"version": 2`` (``3``). Default weight scalers (1)
    are omitted;
    ``limits`` is always written (``null`` when unbounded). :attr:`BodyPlan.name` is
    written as ``x-name``, :attr:`BodyPlan.extras` as they are, :attr:`BodyPlan.unit` as
    ``unit`` (version 2) or ``x-unit`` (version 1).

    Parameters
    ----------
    plan : BodyPlan

    Returns
    -------
    dict
        JSON-serializable; :func:`load_body_plan` reads it back equal to ``plan``.
    """
    out: dict[str, Any] = {}
    if required_version(plan) > 1:
        out["version"] = required_version(plan)
    out["fixed_base"] = plan.fixed_base
    if plan.name is not None:
        out["x-name"] = plan.name
    for key, value in (plan.extras or {}).items():
        out[key] = value
    if plan.unit is not None and out.get("x-unit") != plan.unit:
        # version 2 has the field; version 1 says it as x-unit
        out.update({"unit": plan.unit} if "version" in out else {"x-unit": plan.unit})
    if plan.calibration is not None:
        out["calibration"] = dict(plan.calibration)
    if plan.couplings:
        out["couplings"] = [
            {"name": c.name, "coordinate": c.coordinate, "function": function_to_dict(c.function)}
            for c in plan.couplings
        ]
    out["joints"] = [_joint_to_dict(j) for j in plan.joints]
    return out


def _dumps(data: dict[str, Any]) -> str:
    """JSON text with one line per top-level key and one line per joint."""
    lines = []
    for key, value in data.items():
        if key == "joints":
            joints = ",\n".join(f"    {json.dumps(j, allow_nan=False)}" for j in value)
            lines.append(f'  "joints": [\n{joints}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, allow_nan=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def save_body_plan(plan: BodyPlan, path: str | os.PathLike[str]) -> Path:
    """Write ``plan`` as JSON to ``path`` atomically (temporary file, then rename).

    Parameters
    ----------
    plan : BodyPlan
    path : str or PathLike
        Destination; its directory must exist. An existing file is replaced only once
        the new content is fully written.

    Returns
    -------
    Path
        ``path``.
    """
    return write_text_atomic(Path(os.fspath(path)), _dumps(body_plan_to_dict(plan)))


def body_plan_sha256(plan: BodyPlan) -> str:
    """Content fingerprint of a plan: sha256 of its canonical JSON.

    Canonical JSON is :func:`body_plan_to_dict` without the informative ``x-`` keys,
    with every number a float except the integer fields (``version``, angle ``signs``),
    sorted keys, no whitespace. Equal plans (``==``) have equal fingerprints: a plan built
    in code with ``0`` has the fingerprint of the same plan read from ``0.0`` in a file
    (and a plan without such integers keeps the fingerprint it had before this rule).

    Parameters
    ----------
    plan : BodyPlan

    Returns
    -------
    str
        64 lowercase hex digits.
    """
    data = body_plan_to_dict(plan)
    for key in [k for k in data if k.startswith("x-")]:
        data.pop(key)
    return json_sha256(_floats(data))


#: Fields of the body-plan JSON whose numbers are integers (all others are real numbers).
_INTEGER_FIELDS = frozenset({"version", "signs"})


def _floats(value: Any, key: str | None = None) -> Any:
    """``value`` with its ints as floats, except under :data:`_INTEGER_FIELDS` (bools kept)."""
    if isinstance(value, dict):
        return {k: _floats(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_floats(v, key) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and key not in _INTEGER_FIELDS:
        return float(value)
    return value
