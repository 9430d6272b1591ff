"""Parse an already-decoded body-plan JSON object into a :class:`BodyPlan`.

Field rules (QuickIK's schema, ``etc/bodyplan_20260726.schema.json``; see
``bodyplan.schema.json`` here):

- top level: ``fixed_base`` (bool) and ``joints`` (non-empty array) required; ``version``
  optional (1 or 2; absent means 1); version 2: ``unit`` optional (the length unit of
  offsets and slides, e.g. ``"m"``; a version-1 file says it as ``x-unit``), kept as
  :attr:`BodyPlan.unit`.
- joint: ``name``, ``parent`` (null for the root), ``offset_pos``, ``offset_quat`` and
  ``dofs`` required (version 2: ``kind`` may replace ``dofs``); ``weight_scaler`` optional
  (default 1, >= 0); version 2: ``angles`` optional (named angles,
  :mod:`pipeline.bodyplan.angles`).
- DOF: ``type``, ``axis`` and ``neutral`` required; ``limits`` optional (default null =
  unbounded; QuickIK's parser defaults it too); ``weight_scaler`` optional (default 1);
  ``name`` optional.
- version 3: a ``dofs`` entry with ``coordinate`` and ``function`` (and ``type``,
  ``axis``; nothing else) is a driven axis (:class:`~pipeline.bodyplan.model.DrivenAxis`),
  not a coordinate; top-level ``couplings`` lists dependent coordinates, each
  ``{"name", "coordinate", "function"}`` (:class:`~pipeline.bodyplan.model.Coupling`).
  Functions: :mod:`pipeline.bodyplan.functions`. A driven axis names a DOF or a coupling;
  a coupling names a DOF or an earlier coupling.
- keys starting with ``x-`` are allowed everywhere and ignored (top-level ``x-name`` is kept
  as :attr:`BodyPlan.name`); any other unknown key is an error.

Tree rules: unique joint names, known parents, exactly one root, no cycle, parents listed
before their children (so ``joints[0]`` is the root), unique DOF names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.bodyplan.angles import parse_angles
from pipeline.bodyplan.functions import parse_function
from pipeline.bodyplan.kinds import KIND_KEYS, parse_kind
from pipeline.bodyplan.load_errors import warn_unobservable
from pipeline.bodyplan.model import DOF_TYPES_V1, BodyPlan, Coupling, Dof, DrivenAxis, Joint
from pipeline.bodyplan.validate import (
    Where,
    as_axis,
    as_bool,
    as_limits,
    as_list,
    as_number,
    as_numbers,
    as_object,
    as_quat,
    as_str,
    check_inside,
    check_keys,
    choices,
    json_type,
    require,
)

__all__ = ["KNOWN_VERSIONS", "parse_plan"]

#: Format versions this loader reads.
KNOWN_VERSIONS: tuple[int, ...] = (1, 2, 3)
_TOP_KEYS = ("fixed_base", "joints", "version", "unit", "calibration", "couplings")
_JOINT_KEYS_V1 = ("name", "parent", "offset_pos", "offset_quat", "weight_scaler", "dofs")
_DOF_KEYS = ("type", "axis", "neutral", "limits", "weight_scaler", "name")
_DRIVEN_KEYS = ("type", "axis", "coordinate", "function")
_COUPLING_KEYS = ("name", "coordinate", "function")


def parse_plan(data: Any, file: str) -> BodyPlan:
    """Validate a decoded body-plan object and build the plan.

    Parameters
    ----------
    data : Any
        The decoded JSON (should be an object).
    file : str
        Name used in error messages and stored as :attr:`BodyPlan.source`.

    Returns
    -------
    BodyPlan

    Raises
    ------
    BodyPlanError
        On the first problem found, naming file, joint, DOF index and field.

    Warns
    -----
    UnobservableDofWarning
        When a joint with DOFs has no child joint.
    """
    where = Where(file)
    top = as_object(data, where, None)
    check_keys(top, _TOP_KEYS, where)
    version = _parse_version(top, where)
    unit = _parse_unit(top, version, where)
    fixed_base = as_bool(require(top, "fixed_base", where), where, "fixed_base")
    items = as_list(require(top, "joints", where), where, "joints")
    if not items:
        raise where.error("joints", "must list at least one joint")
    name = top.get("x-name")
    joints: list[Joint] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        joint = _parse_joint(item, index, version, where)
        if joint.name in seen:
            raise where.at(joint=joint.name).error(
                "name", f"duplicate joint name {joint.name!r} (joint #{index})"
            )
        seen.add(joint.name)
        joints.append(joint)
    _check_tree(joints, where)
    _check_dof_names(joints, where)
    couplings = _parse_couplings(top, version, joints, where)
    _check_driven(joints, couplings, where)
    warn_unobservable(joints, file)
    calibration = _parse_calibration(top, version, where)
    needed = 2 if any(j.kind is not None or j.angles is not None for j in joints) else 1
    needed = 2 if calibration is not None else needed
    needed = 3 if couplings or any(j.driven for j in joints) else needed
    return BodyPlan(
        joints=tuple(joints),
        fixed_base=fixed_base,
        version=needed,
        name=name if isinstance(name, str) else None,
        source=file,
        unit=unit,
        calibration=calibration,
        couplings=couplings,
    )


def _v3(key: str, version: int, where: Where) -> None:
    if version < 3:
        raise where.error(
            key,
            'is a version-3 field but the file does not declare "version": 3 '
            "(corrupt or mislabelled file)",
        )


def _coordinate_names(joints: list[Joint]) -> list[str]:
    return [d.name or f"{j.name}/{i}" for j in joints for i, d in enumerate(j.dofs)]


def _parse_couplings(
    top: Mapping[str, Any], version: int, joints: list[Joint], where: Where
) -> tuple[Coupling, ...]:
    """The version-3 ``couplings``: dependent coordinates, each of a known coordinate."""
    if "couplings" not in top:
        return ()
    _v3("couplings", version, where)
    known = _coordinate_names(joints)
    out: list[Coupling] = []
    for i, item in enumerate(as_list(top["couplings"], where, "couplings")):
        field = f"couplings[{i}]"
        obj = as_object(item, where, field)
        check_keys(obj, _COUPLING_KEYS, where)
        name = as_str(require(obj, "name", where), where, f"{field}.name")
        if name in known:
            raise where.error(f"{field}.name", f"{name!r} is already a DOF or coupling name")
        coordinate = as_str(require(obj, "coordinate", where), where, f"{field}.coordinate")
        if coordinate not in known:
            raise where.error(
                f"{field}.coordinate",
                f"{coordinate!r} is not a DOF or an earlier coupling; known: {choices(known)}",
            )
        function = parse_function(require(obj, "function", where), where, f"{field}.function")
        out.append(Coupling(name, coordinate, function))
        known.append(name)
    return tuple(out)


def _check_driven(joints: list[Joint], couplings: tuple[Coupling, ...], where: Where) -> None:
    known = _coordinate_names(joints) + [c.name for c in couplings]
    for joint in joints:
        for axis in joint.driven:
            if axis.coordinate not in known:
                raise where.at(joint=joint.name).error(
                    "dofs",
                    f"driven axis names coordinate {axis.coordinate!r}, which is not a DOF "
                    f"or coupling; known: {choices(known)}",
                )


def _parse_calibration(top: Mapping[str, Any], version: int, where: Where) -> dict | None:
    """The version-2 ``calibration`` object, kept as written.

    Its joint names are checked against the plan by :mod:`pipeline.calibrate.params`.
    """
    if "calibration" not in top:
        return None
    if version < 2:
        raise where.error(
            "calibration",
            'is a version-2 field but the file does not declare "version": 2 '
            "(corrupt or mislabelled file)",
        )
    return dict(as_object(top["calibration"], where, "calibration"))


def _parse_unit(top: Mapping[str, Any], version: int, where: Where) -> str | None:
    """The plan's length unit: ``unit`` (version 2) or ``x-unit`` (version 1 and 2)."""
    if "unit" in top and version < 2:
        raise where.error(
            "unit",
            'is a version-2 field but the file does not declare "version": 2 '
            '(a version-1 file says its unit as "x-unit")',
        )
    key = "unit" if "unit" in top else "x-unit"
    value = top.get(key)
    if value is None:
        return None
    return as_str(value, where, key)


def _parse_version(top: Mapping[str, Any], where: Where) -> int:
    if "version" not in top:
        return 1
    value = top["version"]
    if isinstance(value, bool) or not isinstance(value, int) or value not in KNOWN_VERSIONS:
        known = choices(str(v) for v in KNOWN_VERSIONS)
        raise where.error("version", f"unknown version {json_type(value)}; known versions: {known}")
    return value


def _parse_joint(item: Any, index: int, version: int, file_where: Where) -> Joint:
    label: str | int = index
    if isinstance(item, Mapping) and isinstance(item.get("name"), str) and item["name"]:
        label = item["name"]
    where = file_where.at(joint=label)
    obj = as_object(item, where, None)
    name = as_str(require(obj, "name", where), where, "name")
    kind_keys = [k for k in obj if k in KIND_KEYS]
    if version < 2 and "angles" in obj:
        kind_keys.append("angles")
    if version < 2 and kind_keys:
        raise where.error(
            kind_keys[0],
            'is a version-2 field but the file does not declare "version": 2 '
            "(corrupt or mislabelled file)",
        )
    check_keys(obj, _JOINT_KEYS_V1 + ((*KIND_KEYS, "angles") if version >= 2 else ()), where)
    parent = require(obj, "parent", where)
    if parent is not None:
        parent = as_str(parent, where, "parent")
    offset_pos = as_numbers(require(obj, "offset_pos", where), 3, where, "offset_pos")
    offset_quat = as_quat(require(obj, "offset_quat", where), where)
    weight = as_number(obj.get("weight_scaler", 1.0), where, "weight_scaler", minimum=0)
    kind = None
    driven: list[DrivenAxis] = []
    if "kind" in obj:
        if "dofs" in obj:
            raise where.error("kind", "'kind' and 'dofs' cannot both be given; use one")
        kind, dofs = parse_kind(obj, where)
    else:
        if kind_keys:
            raise where.error(
                kind_keys[0], "is a joint-kind field; it needs 'kind' (and no 'dofs')"
            )
        if "dofs" not in obj and version >= 2:
            raise where.error("dofs", "missing required field ('dofs' or, in version 2, 'kind')")
        raw = as_list(require(obj, "dofs", where), where, "dofs")
        parsed: list[Dof] = []
        for i, d in enumerate(raw):
            if isinstance(d, Mapping) and ("function" in d or "coordinate" in d):
                _v3("function" if "function" in d else "coordinate", version, where.at(dof=i))
                driven.append(_parse_driven(d, where.at(dof=i), len(parsed)))
            else:
                parsed.append(_parse_dof(d, where.at(dof=i)))
        dofs = tuple(parsed)
    angles = parse_angles(obj["angles"], dofs, where) if "angles" in obj else None
    return Joint(
        name=name,
        parent=parent,
        offset_pos=(offset_pos[0], offset_pos[1], offset_pos[2]),
        offset_quat=(offset_quat[0], offset_quat[1], offset_quat[2], offset_quat[3]),
        weight_scaler=weight,
        dofs=dofs,
        kind=kind,
        angles=angles,
        driven=tuple(driven),
    )


def _parse_driven(item: Mapping[str, Any], where: Where, after: int) -> DrivenAxis:
    check_keys(item, _DRIVEN_KEYS, where)
    dof_type = as_str(require(item, "type", where), where, "type", nonempty=False)
    if dof_type not in DOF_TYPES_V1:
        raise where.error("type", f"{dof_type!r} is not one of {choices(DOF_TYPES_V1)}")
    axis = as_axis(require(item, "axis", where), where)
    coordinate = as_str(require(item, "coordinate", where), where, "coordinate")
    function = parse_function(require(item, "function", where), where)
    return DrivenAxis(dof_type, axis, coordinate, function, after)  # type: ignore[arg-type]


def _parse_dof(item: Any, where: Where) -> Dof:
    obj = as_object(item, where, None)
    check_keys(obj, _DOF_KEYS, where)
    dof_type = as_str(require(obj, "type", where), where, "type", nonempty=False)
    if dof_type not in DOF_TYPES_V1:
        raise where.error("type", f"{dof_type!r} is not one of {choices(DOF_TYPES_V1)}")
    axis = as_axis(require(obj, "axis", where), where)
    neutral = as_number(require(obj, "neutral", where), where, "neutral")
    limits = as_limits(obj.get("limits"), where)
    check_inside(neutral, limits, where)
    weight = as_number(obj.get("weight_scaler", 1.0), where, "weight_scaler", minimum=0)
    name = obj.get("name")
    if name is not None:
        name = as_str(name, where, "name", nonempty=False)
    return Dof(dof_type, axis, neutral, limits, weight, name)  # type: ignore[arg-type]


def _check_tree(joints: list[Joint], where: Where) -> None:
    index = {j.name: i for i, j in enumerate(joints)}
    known = choices(index)
    for joint in joints:
        if joint.parent is not None and joint.parent not in index:
            raise where.at(joint=joint.name).error(
                "parent", f"{joint.parent!r} is not a joint; known joints: {known}"
            )
    roots = [j.name for j in joints if j.parent is None]
    if not roots:
        raise where.error("joints", 'no root joint: exactly one joint needs "parent": null')
    if len(roots) > 1:
        raise where.at(joint=roots[1]).error(
            "parent",
            f"several root joints ({choices(repr(r) for r in roots)}); "
            'exactly one joint may have "parent": null',
        )
    for joint in joints:
        chain = [joint.name]
        current = joint.parent
        while current is not None:
            if current in chain:
                loop = " -> ".join([*chain[chain.index(current) :], current])
                raise where.at(joint=joint.name).error("parent", f"cycle: {loop}")
            chain.append(current)
            current = joints[index[current]].parent
    for i, joint in enumerate(joints):
        if joint.parent is not None and index[joint.parent] > i:
            raise where.at(joint=joint.name).error(
                "parent",
                f"parent {joint.parent!r} (joint #{index[joint.parent]}) is listed after its "
                f"child (joint #{i}); list joints in tree order, parents first",
            )


def _check_dof_names(joints: list[Joint], where: Where) -> None:
    seen: dict[str, tuple[str, int]] = {}
    for joint in joints:
        for i, dof in enumerate(joint.dofs):
            name = dof.name if dof.name else f"{joint.name}/{i}"
            if name in seen:
                other, other_i = seen[name]
                dof_at = None if joint.kind is not None else i
                raise where.at(joint=joint.name, dof=dof_at).error(
                    "name" if dof_at is not None else "kind",
                    f"duplicate DOF name {name!r} (also joint {other!r} dof {other_i})",
                )
            seen[name] = (joint.name, i)
