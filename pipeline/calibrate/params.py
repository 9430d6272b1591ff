"""Calibration parameters of a body plan: a global scale, segment scales, marker offsets.

A body plan declares what calibration may change in its version-2 ``calibration`` field
(or the run config does; see :class:`CalibrationSpec`):

- a **global scale** ``g`` (template 1) multiplies every joint's ``offset_pos``;
- **segment scales**: the segment of joint ``j`` is its ``offset_pos`` (the bone from its
  parent's origin to its own). Every non-root joint with a non-zero offset is a segment;
  segments whose names differ only by side (``_l``/``_r``, ``left_``/``right_``, a leading
  ``L``/``R`` or ``l``/``r``, e.g. the fly's ``lf_``/``rf_``) form one group that shares a
  deviation ``d`` (template 0), and ``symmetry`` lists further groups by joint name. A
  segment's offset is ``t_j * (g + d_group)``;
- **marker offsets**: a fixed joint listed in ``markers`` is a tracked point that is not a
  joint centre; its offset is ``g * t_j + delta`` with a free 3-vector ``delta`` (length
  units, the parent's frame after its DOFs);
- a **prior** pulls every parameter toward the template: ``prior.global_scale * L**2 *
  (g - 1)**2 + prior.segment_scale * L**2 * sum d**2 + prior.marker_offset * sum
  |delta|**2``, with ``L`` the template's size for the global scale and the group's
  mean template segment length for a segment scale: a weight of 1 is as strong as one
  observation of the segment's end, so an unobserved segment stays at ``g`` times its
  template length and a well-observed one follows its thousands of observations.

The parameter vector ``theta`` is ``[g (if fitted), d_0 .. d_{G-1}, delta_0 (3) ..]``;
positions are linear in it once the poses are fixed (``offsets`` is linear in ``theta``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.spec import CalibrationSpec, PriorWeights, mirror_names
from pipeline.errors import CalibrationError

__all__ = ["CalibrationSpec", "Parameters", "PriorWeights", "mirror_names", "resolve"]


@dataclass(frozen=True, eq=False)
class Parameters:
    """A plan's calibration parameters, resolved against its joints.

    Attributes
    ----------
    template : BodyPlan
    spec : CalibrationSpec
    group_names : tuple of str
        One name per segment group (the first joint's name).
    joint_group : (J,) int array
        Each joint's segment group, -1 when its segment has no own scale.
    scaled : (J,) bool array
        Joints whose offset follows the global scale (every non-root joint).
    markers : tuple of int
        Joint indices of the markers.
    explicit_groups : frozenset of int
        Groups listed in ``symmetry`` (an unobservable one is an error, not a prior).
    size : float
        The template's size ``L`` (length units).
    """

    template: BodyPlan
    spec: CalibrationSpec
    group_names: tuple[str, ...]
    joint_group: np.ndarray
    scaled: np.ndarray
    markers: tuple[int, ...]
    explicit_groups: frozenset[int]
    size: float

    @property
    def n_global(self) -> int:
        """1 when the global scale is fitted, else 0."""
        return int(self.spec.global_scale)

    @property
    def n_params(self) -> int:
        """Length of ``theta``."""
        return self.n_global + len(self.group_names) + 3 * len(self.markers)

    @property
    def names(self) -> tuple[str, ...]:
        """One label per entry of ``theta``."""
        out = ["global_scale"] if self.spec.global_scale else []
        out += [f"segment_scale/{g}" for g in self.group_names]
        for m in self.markers:
            out += [f"marker_offset/{self.template.joint_names[m]}/{a}" for a in "xyz"]
        return tuple(out)

    @property
    def theta0(self) -> np.ndarray:
        """``(P,)`` the template's parameters (g = 1, d = 0, delta = 0)."""
        out = np.zeros(self.n_params)
        if self.spec.global_scale:
            out[0] = 1.0
        return out

    @property
    def prior_precision(self) -> np.ndarray:
        """``(P,)`` diagonal of the prior's normal matrix (its weights)."""
        pw, size2 = self.spec.prior, self.size**2
        lengths2 = (self.template_offsets**2).sum(axis=1)
        out = [pw.global_scale * size2] * self.n_global
        out += [
            pw.segment_scale * float(lengths2[self.joint_group == k].mean())
            for k in range(len(self.group_names))
        ]
        out += [pw.marker_offset] * (3 * len(self.markers))
        return np.asarray(out, dtype=np.float64)

    @property
    def template_offsets(self) -> np.ndarray:
        """``(J, 3)`` the template's ``offset_pos``."""
        return np.array([j.offset_pos for j in self.template.joints], dtype=np.float64)

    def offset_basis(self) -> np.ndarray:
        """``(J, P, 3)`` with ``offsets(theta) = base + einsum('jpx,p->jx', basis, theta)``."""
        t = self.template_offsets
        basis = np.zeros((len(t), self.n_params, 3))
        if self.spec.global_scale:
            basis[self.scaled, 0] = t[self.scaled]
        for j, grp in enumerate(self.joint_group):
            if grp >= 0:
                basis[j, self.n_global + grp] = t[j]
        first = self.n_global + len(self.group_names)
        for k, m in enumerate(self.markers):
            basis[m, first + 3 * k : first + 3 * k + 3] = np.eye(3)
        return basis

    def offset_base(self) -> np.ndarray:
        """``(J, 3)`` the part of the offsets that no parameter scales."""
        t = self.template_offsets.copy()
        if self.spec.global_scale:
            t[self.scaled] = 0.0
        return t

    def offsets(self, theta: np.ndarray) -> np.ndarray:
        """``(J, 3)`` every joint's ``offset_pos`` under ``theta`` (length units)."""
        return self.offset_base() + np.einsum("jpx,p->jx", self.offset_basis(), theta)

    def apply(self, theta: np.ndarray) -> BodyPlan:
        """The template with the offsets of ``theta`` (everything else unchanged)."""
        offsets = self.offsets(np.asarray(theta, dtype=np.float64))
        joints = tuple(
            dataclasses.replace(j, offset_pos=tuple(float(v) for v in offsets[i]))
            for i, j in enumerate(self.template.joints)
        )
        return dataclasses.replace(self.template, joints=joints)

    def segment_scales(self, theta: np.ndarray) -> np.ndarray:
        """``(J,)`` each joint's segment length over its template length (1 if none)."""
        g = theta[0] if self.spec.global_scale else 1.0
        out = np.where(self.scaled, g, 1.0)
        for j, grp in enumerate(self.joint_group):
            if grp >= 0:
                out[j] = g + theta[self.n_global + grp]
        return out


def _groups(
    plan: BodyPlan, spec: CalibrationSpec, source: str
) -> tuple[list[str], np.ndarray, set[int]]:
    names = plan.joint_names
    known = set(names)
    offsets = np.array([j.offset_pos for j in plan.joints])
    root = plan.parent_indices < 0
    markers = set(spec.markers)
    for key, listed in (("fixed", spec.fixed), ("markers", spec.markers)):
        unknown = [n for n in listed if n not in known]
        if unknown:
            raise CalibrationError(
                f"{source}: calibration.{key}: {unknown} are not joints of the plan; "
                f"joints: {', '.join(names)}"
            )
    segment = [
        spec.segments
        and not root[i]
        and np.linalg.norm(offsets[i]) > 0
        and n not in markers
        and n not in spec.fixed
        for i, n in enumerate(names)
    ]
    joint_group = np.full(len(names), -1)
    group_names: list[str] = []
    explicit: set[int] = set()
    for members in spec.symmetry:
        unknown = [n for n in members if n not in known]
        if unknown:
            raise CalibrationError(
                f"{source}: calibration.symmetry: group {list(members)} names {unknown}, "
                f"not joints of the plan; joints: {', '.join(names)}"
            )
        usable = [n for n in members if segment[names.index(n)]]
        if len(usable) != len(members):
            raise CalibrationError(
                f"{source}: calibration.symmetry: group {list(members)}: "
                f"{[n for n in members if n not in usable]} have no scalable segment (the "
                "root, a zero offset, a marker or a fixed joint)"
            )
        explicit.add(len(group_names))
        for n in members:
            joint_group[names.index(n)] = len(group_names)
        group_names.append(members[0])
    for i, n in enumerate(names):
        if not segment[i] or joint_group[i] >= 0:
            continue
        joint_group[i] = len(group_names)
        for other in mirror_names(n):
            if (
                other in known
                and segment[names.index(other)]
                and joint_group[names.index(other)] < 0
            ):
                joint_group[names.index(other)] = len(group_names)
        group_names.append(n)
    return group_names, joint_group, explicit


def resolve(
    plan: BodyPlan, spec: CalibrationSpec | Mapping[str, Any] | None = None, *, size: float
) -> Parameters:
    """The calibration parameters of ``plan``.

    Parameters
    ----------
    plan : BodyPlan
        The template.
    spec : CalibrationSpec, mapping or None
        None reads the plan's own ``calibration`` field (defaults when absent).
    size : float
        The template's size (length units), the prior's length ``L``.

    Raises
    ------
    CalibrationError
        A listed joint that is not in the plan, a marker that is not a fixed joint, or a
        symmetry group whose members have no segment; the message lists the joints.
    """
    source = plan.source or plan.name or "<plan>"
    if spec is None:
        spec = getattr(plan, "calibration", None)
    if not isinstance(spec, CalibrationSpec):
        spec = CalibrationSpec.from_mapping(spec, source)
    group_names, joint_group, explicit = _groups(plan, spec, source)
    markers: Sequence[int] = [plan.joint_index(n) for n in spec.markers]
    for m in markers:
        if plan.joints[m].dofs or plan.parent_indices[m] < 0:
            raise CalibrationError(
                f"{source}: calibration.markers: {plan.joint_names[m]!r} is not a fixed "
                "non-root joint; a marker is a fixed joint (no DOFs) with a parent"
            )
    return Parameters(
        template=plan,
        spec=spec,
        group_names=tuple(group_names),
        joint_group=joint_group,
        scaled=plan.parent_indices >= 0,
        markers=tuple(markers),
        explicit_groups=frozenset(explicit),
        size=float(size),
    )
