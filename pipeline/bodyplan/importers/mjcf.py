"""Import a MuJoCo MJCF model as a body plan, through MuJoCo's own compiler.

The model is compiled by ``mujoco`` (``pip install 'kinefit[mjcf]'``) with ``fusestatic``
off, so includes, ``<default>`` classes, ``childclass``, frames, the angle unit and the
Euler sequence are MuJoCo's business and every ``<body>`` survives. Meshes are dropped
before compiling, so a model loads without its mesh files. The compiled
``MjModel`` is read as it is:

- each body becomes a joint (keypoint) at the body's origin; its MuJoCo joints apply in
  the listed order: ``hinge`` -> hinge DOF, ``slide`` -> slide DOF (the body then gets a
  fixed node below the slide's node, since a body-plan keypoint sits before its own DOFs),
  ``ball`` -> ``kind: ball`` (twist axis = the joint's ``axis``; MuJoCo's ``range`` caps the
  total angle, imported as the swing half-angle and a symmetric twist range, which is not
  the same set); a joint ``pos`` off the body origin becomes a helper node at the anchor;
- a hinge or slide's DOF value is ``qpos - qpos0`` (MuJoCo turns joints by their offset
  from the reference ``ref``); ranges are shifted the same way and kept only when
  ``limited``;
- the free joint of the only top-level body becomes the free root (its ``qpos`` is the
  root pose); a free joint anywhere else, or several top-level bodies with one, is refused;
- sites become fixed keypoints when asked for (``sites=True`` or a list of names);
- ``<equality>`` joint couplings (panda's fingers) are reported with a
  :class:`~pipeline.bodyplan.importers.ConversionWarning` and imported as independent
  DOFs (``strict=True`` refuses them); tendon equalities couple several joints and are
  refused. Tendons alone, actuators and contacts are not kinematics and are ignored.

Lengths are the model's own: ``x-unit`` is ``"m"``, ``"cm"`` or ``"mm"`` when the gravity's
magnitude is 9.81 in that unit (NeuroMechFly: -9810, millimetres), ``"unknown"`` otherwise,
unless ``unit=`` says.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.importers._build import Axis, Ball, Fixed, PlanBuilder, Step
from pipeline.bodyplan.importers._xml import read_xml
from pipeline.bodyplan.importers.finishing import ConversionWarning, finish_plan, starts_with
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan
from pipeline.provenance.hashing import tree_sha256

__all__ = ["import_plan", "sniff", "import_mjcf", "load_mujoco_model"]

FORMAT = "mjcf"
SUFFIXES = (".xml", ".mjcf")
_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3
_EQ_JOINT, _EQ_TENDON = 2, 3
_WRAP_JOINT = 1


def _mujoco():
    try:
        import mujoco
    except ImportError:
        raise ImportError(
            "importing MJCF models needs MuJoCo: pip install 'kinefit[mjcf]'"
        ) from None
    return mujoco


def load_mujoco_model(path: str | Path, file: str | None = None):
    """Compile an MJCF file for its kinematics: ``fusestatic`` off, meshes dropped.

    Every body is kept; mesh assets and mesh geoms are deleted before compiling (they do
    not move anything, and their files need not exist), and bodies without mass compile.

    Parameters
    ----------
    path : str or Path
    file : str, optional
        Name used in messages.

    Returns
    -------
    mujoco.MjModel
    """
    mujoco = _mujoco()
    file = file or str(path)
    try:
        if Path(path).suffix.lower() == ".xml":
            spec = mujoco.MjSpec.from_file(str(path))
        else:  # MuJoCo picks its decoder by suffix; includes then resolve from the cwd
            spec = mujoco.MjSpec.from_string(Path(path).read_text(encoding="utf-8"))
        spec.compiler.fusestatic = False
        # kinematics needs no meshes: the files they name need not be there
        for geom in list(spec.geoms):
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                spec.delete(geom)
        for mesh in list(spec.meshes):
            spec.delete(mesh)
        # kinematics needs no masses: let bodies without geoms compile
        spec.compiler.boundmass = max(spec.compiler.boundmass, 1e-9)
        spec.compiler.boundinertia = max(spec.compiler.boundinertia, 1e-12)
        return spec.compile()
    except Exception as exc:  # MuJoCo raises ValueError with its own message
        raise BodyPlanError(file, f"MuJoCo cannot compile the MJCF model: {exc}") from None


def _unit_from_gravity(gravity: np.ndarray) -> str:
    g = float(np.linalg.norm(gravity))
    for unit, value in (("m", 9.81), ("cm", 981.0), ("mm", 9810.0)):
        if abs(g - value) <= 0.01 * value:
            return unit
    return "unknown"


def import_mjcf(
    path: str | Path,
    *,
    sites: bool | Iterable[str] | None = None,
    unit: str | None = None,
    strict: bool = False,
    source: str | None = None,
) -> BodyPlan:
    """Import an MJCF model.

    Parameters
    ----------
    path : str or Path
        The model's XML file (its includes and assets resolve relative to it).
    sites : bool or iterable of str, optional
        Sites to add as fixed keypoints: ``True`` for all, or their names.
    unit : str, optional
        Length unit of the model; guessed from the gravity when omitted.
    strict : bool
        Refuse joint couplings (``<equality><joint>``) instead of warning.
    source : str, optional
        Name used in messages (default: the path).

    Returns
    -------
    BodyPlan
        With ``x-source`` (file, engine, choices, ``engine_configuration``: the ``qpos``
        layout) and ``x-unit`` in :attr:`BodyPlan.extras`.

    Raises
    ------
    BodyPlanError
        Malformed XML (line, column), a model MuJoCo cannot compile, a tendon equality, a
        free joint below the root, unknown site names; joint couplings when ``strict``.
    """
    path = Path(path)
    file = source or str(path)
    index = read_xml(path, file, "MJCF")
    if index.root.tag != "mujoco":
        raise BodyPlanError(file, f"root element is <{index.root.tag}>, not <mujoco>: not MJCF")
    mujoco = _mujoco()
    m = load_mujoco_model(path, file)

    def name(obj, i: int, fallback: str) -> str:
        return mujoco.mj_id2name(m, obj, i) or fallback

    body_names = [name(mujoco.mjtObj.mjOBJ_BODY, b, f"body{b}") for b in range(m.nbody)]
    joint_names = [name(mujoco.mjtObj.mjOBJ_JOINT, j, "") for j in range(m.njnt)]
    couplings = _check_equalities(m, index, joint_names, file, strict, mujoco)
    tops = [b for b in range(1, m.nbody) if m.body_parentid[b] == 0]
    free_root = (
        len(tops) == 1 and m.body_jntnum[tops[0]] == 1 and m.jnt_type[m.body_jntadr[tops[0]]] == 0
    )
    site_names = [name(mujoco.mjtObj.mjOBJ_SITE, s, f"site{s}") for s in range(m.nsite)]
    builder = PlanBuilder(reserved=[*body_names, *site_names])
    node_of: dict[int, str] = {}
    entries: list[dict[str, Any]] = []
    if len(tops) != 1:
        node_of[0] = builder.add_body(body_names[0], None, [])
    for b in range(1, m.nbody):
        parent = node_of.get(int(m.body_parentid[b]))
        steps: list[Step] = []
        is_free_root = free_root and b == tops[0]
        if not is_free_root:
            steps.append(Fixed(m.body_pos[b].copy(), m.body_quat[b].copy()))
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            steps.extend(_joint_steps(m, j, b, joint_names, body_names, is_free_root, index, file))
            entries.append(_entry(m, j, joint_names, body_names))
        node_of[b] = builder.add_body(body_names[b], parent, steps)
    kept_sites = _sites(sites, site_names, file)
    for s in kept_sites:
        i = site_names.index(s)
        builder.add_point(s, node_of[int(m.site_bodyid[i])], m.site_pos[i], m.site_quat[i])
    for entry in entries:
        if entry["type"] == "ball":
            entry["node"] = builder.ball_node(entry["node"])
    extras = {
        "x-unit": unit or _unit_from_gravity(m.opt.gravity),
        "x-up-axis": "z",  # the format's convention (pipeline.fit.world_frame)
        "x-source": {
            "format": FORMAT,
            "file": str(path),
            "sha256": tree_sha256(path),
            "engine": f"mujoco {mujoco.__version__}",
            "compiler": "MjSpec.compile, fusestatic off (every body kept), meshes dropped",
            "angles": "rad (MuJoCo's compiled model, whatever <compiler angle> says)",
            "unit_from": "unit= argument" if unit else "gravity magnitude",
            "root": "free joint -> free root" if free_root else "fixed base",
            "dof_value": "qpos - qpos0 for hinges and slides (ranges shifted alike)",
            "sites": kept_sites,
            "couplings": couplings,
            "engine_configuration": {"engine": "mujoco", "nq": int(m.nq), "entries": entries},
        },
    }
    return finish_plan(builder, not free_root, m_name(m, mujoco, path), extras, file)


def m_name(m, mujoco, path: Path) -> str:
    """The model's name (``<mujoco model=...>``), or the file's stem."""
    names = bytes(m.names)
    return names[: names.find(b"\0")].decode("utf-8", "replace") or path.stem


def _joint_steps(m, j, b, joint_names, body_names, is_free_root, index, file) -> list[Step]:
    kind = int(m.jnt_type[j])
    label = joint_names[j] or f"{body_names[b]}/joint{j - m.body_jntadr[b]}"
    if kind == _FREE:
        if is_free_root:
            return []
        raise BodyPlanError(
            file,
            f"{index.where('joint', joint_names[j] or None)} in body {body_names[b]!r}: a free "
            "joint below the root has no body-plan kind (only the one top-level body may "
            "be free)",
        )
    anchor = m.jnt_pos[j].copy()
    around = bool(np.any(anchor != 0.0))
    steps: list[Step] = [Fixed(anchor)] if around else []
    limited = bool(m.jnt_limited[j])
    if kind == _BALL:
        limit = float(m.jnt_range[j][1]) if limited and m.jnt_range[j][1] > 0 else None
        twist = None if limit is None else (-limit, limit)
        steps.append(Ball(m.jnt_axis[j].copy(), label, limit, twist))
    else:
        q0 = float(m.qpos0[m.jnt_qposadr[j]])
        limits = None
        if limited:
            limits = (float(m.jnt_range[j][0]) - q0, float(m.jnt_range[j][1]) - q0)
        dof_type = "hinge" if kind == _HINGE else "slide"
        steps.append(Axis(dof_type, m.jnt_axis[j].copy(), label, limits, node=label))
    if around:
        steps.append(Fixed(-anchor))
    return steps


def _entry(m, j, joint_names, body_names) -> dict[str, Any]:
    kind = ("free", "ball", "slide", "hinge")[int(m.jnt_type[j])]
    b = int(m.jnt_bodyid[j])
    label = joint_names[j] or f"{body_names[b]}/joint{j - m.body_jntadr[b]}"
    out: dict[str, Any] = {"joint": joint_names[j], "type": kind, "index": int(m.jnt_qposadr[j])}
    if kind in ("hinge", "slide"):
        out.update({"dof": label, "scale": 1.0, "offset": -float(m.qpos0[m.jnt_qposadr[j]])})
    elif kind == "ball":
        out.update({"node": label, "axis": [float(v) for v in m.jnt_axis[j]]})
    return out


def _sites(sites, site_names: list[str], file: str) -> list[str]:
    if not sites:
        return []
    if sites is True:
        return list(site_names)
    wanted = [str(s) for s in sites]  # type: ignore[union-attr]
    unknown = [s for s in wanted if s not in site_names]
    if unknown:
        raise BodyPlanError(
            file, f"no site named {', '.join(map(repr, unknown))}; sites: {', '.join(site_names)}"
        )
    return wanted


def _check_equalities(m, index, joint_names, file, strict, mujoco) -> list[dict[str, Any]]:
    elements = [
        e
        for e in index.elements
        if e.parent is not None and index.elements[e.parent].tag == "equality"
    ]
    found = []
    for k in range(m.neq):
        kind = int(m.eq_type[k])
        if kind not in (_EQ_JOINT, _EQ_TENDON):
            continue
        el = elements[k] if k < len(elements) else None
        where = f"<equality><{el.tag}> (line {el.line})" if el else f"equality #{k}"
        if kind == _EQ_TENDON:
            tendons = [int(m.eq_obj1id[k])] + ([int(m.eq_obj2id[k])] if m.eq_obj2id[k] >= 0 else [])
            joints = [
                joint_names[int(m.wrap_objid[w])]
                for t in tendons
                for w in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t])
                if m.wrap_type[w] == _WRAP_JOINT
            ]
            raise BodyPlanError(
                file,
                f"{where}: a tendon equality couples joints {', '.join(map(repr, joints))}; "
                "a body plan has no coupled joints (remove the equality to import them as "
                "independent DOFs)",
            )
        j1, j2 = (
            joint_names[int(m.eq_obj1id[k])],
            (joint_names[int(m.eq_obj2id[k])] if m.eq_obj2id[k] >= 0 else None),
        )
        coef = [float(v) for v in m.eq_data[k][:5]]
        message = (
            f"{file}: {where}: joint {j1!r} is coupled to {j2!r} (polynomial {coef}); "
            "imported as independent DOFs (a body plan has no coupled joints)"
        )
        if strict:
            raise BodyPlanError(file, message.split(": ", 1)[1] + "; strict import refuses it")
        warnings.warn(message, ConversionWarning, stacklevel=3)
        found.append({"element": where, "joint": j1, "coupled_to": j2, "polycoef": coef})
    return found


def sniff(path: str | Path) -> bool:
    """True when the file's first element is MJCF (``<mujoco>``)."""
    return starts_with(path, "<mujoco")


#: The format contract's call (:mod:`pipeline.formats.contract`).
import_plan = import_mjcf
