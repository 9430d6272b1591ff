"""The body-plan model: frozen joints, DOFs and joint kinds.

A body plan is the fixed description of a kinematic tree. It holds no per-solve state;
solvers and forward kinematics compile it into arrays (see
:func:`pipeline.kinematics.plan_arrays.compile_plan`).

Semantics: every joint is also a keypoint. A joint's world origin
is ``parent_origin + parent_rotation @ offset_pos`` and its rotation
``parent_rotation @ R(offset_quat)``; then its DOFs apply in order: a hinge multiplies the
rotation by ``R(axis, angle)``, a slide moves the origin by ``rotation @ axis * value``.
The joint's keypoint is its origin *before* its own DOFs, so a joint's DOFs move only its
descendants.

Joint kinds (version 2) are expressed through the same scalar coordinates (``Dof``):

- ``hinge``: one ``hinge`` DOF; ``prismatic``: one ``slide`` DOF; ``fixed``: none.
- ``universal``: two ``hinge`` DOFs, primary then secondary (orthogonalized).
- ``ball``: swing-twist, three coordinates ``swing_y``, ``swing_z`` (type ``swing``) and
  ``twist`` (type ``hinge`` about ``axis``). The relative rotation is
  ``exp(swing_y * b1 + swing_z * b2) @ R(axis, twist)`` where ``(b1, b2)`` is the
  orthonormal basis of the plane orthogonal to ``axis`` given by
  :func:`pipeline.kinematics.rotations.orthonormal_basis`. The swing is a rotation vector
  orthogonal to the twist axis, so the rest pose (all zero) is far from any singularity.
  Its cone limit is elliptical in ``(swing_y, swing_z)`` with half-angles
  ``swing_limit``, and is enforced by radial projection, not by the DOF's box ``limits``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from pipeline.bodyplan.functions import Function

DofType = Literal["hinge", "slide", "swing"]
KindName = Literal["fixed", "hinge", "ball", "universal", "prismatic"]
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Interval = tuple[float, float]

#: Kinds a version-2 joint may declare.
KINDS: tuple[str, ...] = ("fixed", "hinge", "ball", "universal", "prismatic")
#: Scalar DOF types of QuickIK's format (version 1).
DOF_TYPES_V1: tuple[str, ...] = ("hinge", "slide")


@dataclass(frozen=True)
class Dof:
    """One scalar coordinate of a joint.

    Attributes
    ----------
    type : {"hinge", "slide", "swing"}
        ``hinge``: rotation about ``axis`` (rad). ``slide``: translation along ``axis``
        (length units of the plan). ``swing``: one component of a ball joint's swing
        rotation vector (rad); only produced by ``kind: ball`` joints.
    axis : tuple of 3 float
        Unit vector in the joint's frame (after ``offset_quat`` and the joint's earlier
        DOFs). Normalized on load: forward kinematics trusts it to be unit length.
    neutral : float
        Value a cold start begins at and the neutral prior pulls toward.
    limits : tuple of 2 float or None
        ``(min, max)``; ``None`` is unbounded. Swing DOFs carry none: their cone is
        elliptical and lives on the joint (:class:`JointKind`).
    weight_scaler : float
        Multiplies the neutral prior weight of this DOF (>= 0).
    name : str or None
        Optional name; :attr:`BodyPlan.dof_names` falls back to ``"<joint>/<index>"``.
    """

    type: DofType
    axis: Vec3
    neutral: float = 0.0
    limits: Interval | None = None
    weight_scaler: float = 1.0
    name: str | None = None


@dataclass(frozen=True)
class DrivenAxis:
    """A transform axis driven by a function of a coordinate (version 3).

    Not a coordinate of its own: its value is ``function(coordinate)``, where the
    coordinate is a DOF of the plan or a dependent coordinate (:class:`Coupling`). It
    applies like a DOF of the same type (a hinge rotates the joint's frame about
    ``axis``, a slide moves its origin along it) at its place among the joint's DOFs.

    Attributes
    ----------
    type : {"hinge", "slide"}
    axis : tuple of 3 float
        Unit vector in the joint's frame as the earlier axes left it.
    coordinate : str
        Name of the DOF or dependent coordinate driving it.
    function : Function
        Its value (rad or length units) as a function of the coordinate.
    after : int
        How many of the joint's own DOFs apply before it; axes with the same ``after``
        apply in the order listed.
    """

    type: DofType
    axis: Vec3
    coordinate: str
    function: Function
    after: int = 0


@dataclass(frozen=True)
class Coupling:
    """A dependent coordinate: a function of another coordinate (version 3).

    OpenSim's ``CoordinateCouplerConstraint``: ``name = function(coordinate)``. It is not
    a DOF (the solver's state holds only the independent coordinates); driven axes name
    it like a DOF.

    Attributes
    ----------
    name : str
        The dependent coordinate; unique among DOF and coupling names.
    coordinate : str
        The independent coordinate: a DOF, or a coupling listed before this one.
    function : Function
    """

    name: str
    coordinate: str
    function: Function


@dataclass(frozen=True)
class JointKind:
    """Version-2 joint kind with its limits, as written in the file.

    Attributes
    ----------
    kind : {"fixed", "hinge", "ball", "universal", "prismatic"}
    axis : tuple of 3 float or None
        Hinge/prismatic axis, or the ball's twist axis (unit, joint frame).
    axes : tuple of two 3-vectors or None
        Universal primary and secondary axes; the secondary is orthogonalized against
        the primary on load.
    limits : tuple
        Hinge: ``(min, max)`` rad; prismatic: ``(min, max)`` length units; universal:
        ``((min, max), (min, max))``; ``None`` where unbounded.
    swing_limit : tuple of 2 float or None
        Ball: cone half-angles (rad) about ``b1`` and ``b2``; a single half-angle in the
        file is stored twice (circular cone).
    twist_limit : tuple of 2 float or None
        Ball: twist interval (rad).
    neutral : tuple of float
        One value per coordinate (ball: ``swing_y, swing_z, twist``).
    weight_scaler : float
        Neutral-prior weight scaler applied to each coordinate of the joint.
    """

    kind: KindName
    axis: Vec3 | None = None
    axes: tuple[Vec3, Vec3] | None = None
    limits: Interval | tuple[Interval | None, Interval | None] | None = None
    swing_limit: tuple[float, float] | None = None
    twist_limit: Interval | None = None
    neutral: tuple[float, ...] = ()
    weight_scaler: float = 1.0


@dataclass(frozen=True)
class AngleSpec:
    """How a joint's rotation is reported as named angles (version 2, ``angles``).

    See :mod:`pipeline.bodyplan.angles` for the semantics.

    Attributes
    ----------
    sequence : str or None
        Intrinsic Euler sequence over the joint's rest-frame axes (``"xzy"``), lower
        case; ``None`` for a joint with one rotational coordinate (it reports that value).
    names : tuple of str
        One name per reported angle (``flexion``); coordinates ``<joint>/<name>``.
    signs : tuple of int
        ``+1`` or ``-1`` per angle.
    """

    sequence: str | None
    names: tuple[str, ...]
    signs: tuple[int, ...]


@dataclass(frozen=True)
class Joint:
    """A joint (and keypoint) of the tree.

    Attributes
    ----------
    name : str
    parent : str or None
        ``None`` for the root.
    offset_pos : tuple of 3 float
        Position in the parent's frame after the parent's DOFs (length units).
    offset_quat : tuple of 4 float
        Rest rotation relative to the parent, ``(w, x, y, z)``, unit (normalized on load).
    weight_scaler : float
        Multiplies the observation weight of this joint's keypoint (>= 0).
    dofs : tuple of Dof
        Scalar coordinates in the order they apply. For a kinded joint these are derived
        from ``kind``.
    kind : JointKind or None
        Version-2 kind; ``None`` for a plain QuickIK ``dofs`` joint.
    angles : AngleSpec or None
        Version-2 named-angle convention; ``None`` reports the DOF coordinates.
    driven : tuple of DrivenAxis
        Version 3: transform axes driven by functions of coordinates, interleaved with
        ``dofs`` by their ``after``.
    """

    name: str
    parent: str | None
    offset_pos: Vec3 = (0.0, 0.0, 0.0)
    offset_quat: Quat = (1.0, 0.0, 0.0, 0.0)
    weight_scaler: float = 1.0
    dofs: tuple[Dof, ...] = ()
    kind: JointKind | None = None
    angles: AngleSpec | None = None
    driven: tuple[DrivenAxis, ...] = ()

    @property
    def axes(self) -> tuple[Dof | DrivenAxis, ...]:
        """The joint's DOFs and driven axes in the order they apply."""
        out: list[Dof | DrivenAxis] = []
        for k in range(len(self.dofs) + 1):
            out.extend(d for d in self.driven if d.after == k)
            if k < len(self.dofs):
                out.append(self.dofs[k])
        return tuple(out)


@dataclass(frozen=True)
class BodyPlan:
    """A kinematic tree: joints in tree order (parents before children).

    Attributes
    ----------
    joints : tuple of Joint
        In tree order; ``joints[0]`` is the root.
    fixed_base : bool
        ``False`` gives the root 6 free DOFs (position and orientation).
    version : int
        Lowest format version the plan needs (1: QuickIK, 2: joint kinds, 3: driven axes
        and couplings).
    name : str or None
        From the file's ``x-name`` when present (informative only).
    source : str or None
        Where the plan was loaded from; used in messages, not compared.
    extras : mapping or None
        The file's other top-level ``x-`` keys (e.g. an importer's ``x-source`` and
        ``x-unit``), kept and written back as they are; informative, not compared.
    unit : str or None
        Length unit of the plan's offsets and slides (``"m"``, ``"mm"``, ...): the
        version-2 field ``unit``, or ``x-unit`` in version 1; None when the file does not
        say. Informative (named by the scale check), not compared.
    calibration : mapping or None
        The version-2 field ``calibration``: what subject calibration may change
        (:class:`pipeline.calibrate.params.CalibrationSpec`); not compared (it does not
        change the kinematics) but part of the plan's sha256.
    couplings : tuple of Coupling
        Version 3: dependent coordinates, in the order they are computed.
    """

    joints: tuple[Joint, ...]
    fixed_base: bool = False
    version: int = 1
    name: str | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False, repr=False)
    extras: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    unit: str | None = field(default=None, compare=False)
    calibration: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    couplings: tuple[Coupling, ...] = ()

    # ------------------------------------------------------------------ hashing
    # Plans key the compiled-model caches; hashing the joint tree on every solver call
    # cost 0.1 ms. The hash is cached per process and never pickled (str hashes differ
    # between processes).
    @cached_property
    def _hash(self) -> int:
        return hash((self.joints, self.fixed_base, self.version, self.couplings))

    def __hash__(self) -> int:
        return self._hash

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    # ------------------------------------------------------------------ names
    @cached_property
    def joint_names(self) -> tuple[str, ...]:
        """Joint (and keypoint) names in tree order."""
        return tuple(j.name for j in self.joints)

    @cached_property
    def dof_names(self) -> tuple[str, ...]:
        """DOF names in state order: the DOF's ``name`` or ``"<joint>/<index>"``."""
        return tuple(
            d.name if d.name else f"{j.name}/{i}" for j in self.joints for i, d in enumerate(j.dofs)
        )

    @cached_property
    def coupled(self) -> bool:
        """The plan has driven axes or couplings (version 3)."""
        return bool(self.couplings) or any(j.driven for j in self.joints)

    @property
    def n_joints(self) -> int:
        """Number of joints (= keypoints)."""
        return len(self.joints)

    @cached_property
    def n_dofs(self) -> int:
        """Number of scalar DOF coordinates (root pose excluded)."""
        return sum(len(j.dofs) for j in self.joints)

    # ------------------------------------------------------------------ arrays
    @cached_property
    def parent_indices(self) -> np.ndarray:
        """``(n_joints,)`` int: index of each joint's parent, -1 for the root."""
        index = {name: i for i, name in enumerate(self.joint_names)}
        out = np.array([-1 if j.parent is None else index[j.parent] for j in self.joints])
        out.flags.writeable = False
        return out

    @cached_property
    def dof_joint(self) -> np.ndarray:
        """``(n_dofs,)`` int: the joint each DOF belongs to."""
        out = np.array([i for i, j in enumerate(self.joints) for _ in j.dofs], dtype=np.intp)
        out.flags.writeable = False
        return out

    def _dof_array(self, values: list[float]) -> np.ndarray:
        out = np.asarray(values, dtype=np.float64).reshape(self.n_dofs)
        out.flags.writeable = False
        return out

    @cached_property
    def neutral(self) -> np.ndarray:
        """``(n_dofs,)`` neutral values (rad or length units)."""
        return self._dof_array([d.neutral for j in self.joints for d in j.dofs])

    @cached_property
    def lower(self) -> np.ndarray:
        """``(n_dofs,)`` lower limits; ``-inf`` where unbounded."""
        return self._dof_array(
            [d.limits[0] if d.limits else -np.inf for j in self.joints for d in j.dofs]
        )

    @cached_property
    def upper(self) -> np.ndarray:
        """``(n_dofs,)`` upper limits; ``+inf`` where unbounded."""
        return self._dof_array(
            [d.limits[1] if d.limits else np.inf for j in self.joints for d in j.dofs]
        )

    @cached_property
    def dof_weight_scalers(self) -> np.ndarray:
        """``(n_dofs,)`` neutral-prior weight scalers."""
        return self._dof_array([d.weight_scaler for j in self.joints for d in j.dofs])

    @cached_property
    def joint_weight_scalers(self) -> np.ndarray:
        """``(n_joints,)`` observation weight scalers."""
        out = np.array([j.weight_scaler for j in self.joints], dtype=np.float64)
        out.flags.writeable = False
        return out

    def joint_index(self, name: str) -> int:
        """Index of joint ``name``; ``KeyError`` listing valid names otherwise."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise KeyError(
                f"no joint named {name!r}; valid joints: {', '.join(self.joint_names)}"
            ) from None
