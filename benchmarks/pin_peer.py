"""The Pinocchio peer: kinefit's body plan as a Pinocchio model, and QuickIK's Gauss-Newton loop.

kinefit measures its solver against Pinocchio (its peer in the README's speed figures), the way
QuickIK's own benchmark does (``benchmark/extern/pinocchio`` there): Pinocchio has no
general IK solver, so the peer is the same Gauss-Newton / Levenberg-Marquardt loop written
in Python around Pinocchio's C++ kinematics (forward kinematics, joint Jacobians, frame
Jacobians, Lie-group integration) and numpy's dense solve.

Model (:func:`build_pin_model`): a free root is a ``JointModelFreeFlyer`` under the universe
(a fixed base has no root joint: the root hangs from the universe). Every hinge DOF is a
``JointModelRevoluteUnaligned(axis)`` and every slide DOF a
``JointModelPrismaticUnaligned(axis)``; a body-plan joint's DOFs are chained with identity
placements, and the body-plan joint's offset (``offset_pos``, ``offset_quat``) is the
placement of its first Pinocchio joint on its parent's *last* Pinocchio joint. A joint
without DOFs is a fixed frame at that placement, and its children hang from the same
Pinocchio joint through the composed placement. Each body-plan joint's keypoint is an
``OP_FRAME`` at its offset on the parent's last Pinocchio joint, i.e. the joint's origin
*before* its own DOFs, as the body-plan semantics require. Body-plan DOF ``i`` is
configuration ``q[nq_root + i]`` and velocity ``v[nv_root + i]`` (both 1-dimensional
joints), with ``nq_root, nv_root = 7, 6`` for a free root and ``0, 0`` otherwise.

Solver (:class:`PinGaussNewton`): per iteration ``computeJointJacobians`` (which runs the
forward kinematics) and ``updateFramePlacements``, then for each observed keypoint the
first three rows of ``getFrameJacobian(..., LOCAL_WORLD_ALIGNED)`` and its residual, stacked
into a preallocated ``(3 m, nv)`` matrix. Normal equations ``A = J^T W J`` plus the neutral
prior (``neutral_weight * dof weight_scaler`` on the DOF diagonal, gradient toward the
neutral pose), relative damping ``A_ii += damping * max(A_ii, 1)``, ``np.linalg.solve``,
``pin.integrate``, clamp to limits, and early stop once the largest position update and the
largest angle update are below their tolerances. The free root's tangent is Pinocchio's
body-frame twist (linear, angular); its components enter the tolerance test as they are
(same norms as kinefit's world-frame increments, and the same fixed point).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pinocchio as pin

from pipeline.bodyplan.model import BodyPlan

__all__ = ["PinBody", "PinGaussNewton", "build_pin_model"]

_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


class PinBody(NamedTuple):
    """A body plan compiled into a Pinocchio model.

    Attributes
    ----------
    model : pinocchio.Model
    keypoint_frame_ids : tuple of int
        One ``OP_FRAME`` per body-plan joint, in the plan's joint order.
    nq_root, nv_root : int
        Configuration / velocity size of the root joint (7, 6 for a free root; 0, 0 fixed).
    q_neutral : (nq,) float64
        Root at the origin with identity rotation, DOFs at their neutral values.
    """

    model: pin.Model
    keypoint_frame_ids: tuple[int, ...]
    nq_root: int
    nv_root: int
    q_neutral: np.ndarray


def _offset(joint) -> pin.SE3:
    w, x, y, z = joint.offset_quat
    rot = pin.Quaternion(w, x, y, z).normalized().matrix()
    return pin.SE3(rot, np.asarray(joint.offset_pos, dtype=np.float64))


def build_pin_model(plan: BodyPlan) -> PinBody:
    """Compile ``plan`` into an equivalent Pinocchio model (see the module docstring).

    Parameters
    ----------
    plan : BodyPlan
        Joints in tree order with ``hinge`` / ``slide`` DOFs.

    Returns
    -------
    PinBody
        ``(model, keypoint_frame_ids, nq_root, nv_root, q_neutral)``.

    Raises
    ------
    ValueError
        For a DOF type other than ``hinge`` or ``slide``.
    """
    model = pin.Model()
    model.name = plan.name or "body_plan"
    if plan.fixed_base:
        root_joint = 0
    else:
        root_joint = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
    # Per body-plan joint: the Pinocchio joint its children hang from, and the placement
    # of its post-DOF frame on that joint.
    attach: dict[str, tuple[int, pin.SE3]] = {}
    frame_ids = []
    for joint in plan.joints:
        if joint.parent is None:
            parent_id, parent_place = root_joint, pin.SE3.Identity()
        else:
            parent_id, parent_place = attach[joint.parent]
        place = parent_place * _offset(joint)
        frame = pin.Frame(joint.name, parent_id, place, pin.FrameType.OP_FRAME)
        frame_ids.append(model.addFrame(frame, False))
        current, placement = parent_id, place
        for k, dof in enumerate(joint.dofs):
            axis = np.asarray(dof.axis, dtype=np.float64)
            if dof.type == "hinge":
                jmodel = pin.JointModelRevoluteUnaligned(axis)
            elif dof.type == "slide":
                jmodel = pin.JointModelPrismaticUnaligned(axis)
            else:
                raise ValueError(
                    f"joint {joint.name!r} dof {k}: type {dof.type!r} has no Pinocchio "
                    "equivalent here; valid: hinge, slide"
                )
            current = model.addJoint(current, jmodel, placement, f"{joint.name}/{k}")
            placement = pin.SE3.Identity()
        attach[joint.name] = (current, placement)
    nq_root, nv_root = (0, 0) if plan.fixed_base else (7, 6)
    if model.nv - nv_root != plan.n_dofs:  # pragma: no cover - construction invariant
        raise AssertionError("Pinocchio model and body plan disagree on the DOF count")
    q_neutral = pin.neutral(model)
    q_neutral[nq_root:] = plan.neutral
    return PinBody(model, tuple(frame_ids), nq_root, nv_root, q_neutral)


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """A contiguous index array as a slice (cheaper to apply), anything else unchanged."""
    if index.size and np.array_equal(index, np.arange(index[0], index[-1] + 1)):
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


class PinGaussNewton:
    """QuickIK's Gauss-Newton loop in Python around Pinocchio's C++ kinematics.

    Parameters
    ----------
    plan : BodyPlan
    n_iterations : int
        Maximum Gauss-Newton steps per frame.
    neutral_weight : float
        Weight of the neutral prior (times each DOF's ``weight_scaler``).
    position_tolerance : float
        Early stop threshold on the largest root-translation / slide update (length units).
    angle_tolerance : float
        Early stop threshold on the largest root-rotation / hinge update (rad).
    damping : float
        Relative Levenberg-Marquardt damping: ``A_ii += damping * max(A_ii, 1)``.
    """

    def __init__(
        self,
        plan: BodyPlan,
        n_iterations: int = 10,
        neutral_weight: float = 1e-3,
        position_tolerance: float = 1e-3,
        angle_tolerance: float = 1e-3,
        damping: float = 1e-6,
    ) -> None:
        self.plan = plan
        self.body = build_pin_model(plan)
        self.model = self.body.model
        self.data = self.model.createData()
        self.n_iterations = int(n_iterations)
        self.position_tolerance = float(position_tolerance)
        self.angle_tolerance = float(angle_tolerance)
        self.damping = float(damping)
        nv, r = self.model.nv, self.body.nv_root
        self._nv = nv
        self._frame_ids = np.asarray(self.body.keypoint_frame_ids)
        self._prior = neutral_weight * np.asarray(plan.dof_weight_scalers, dtype=np.float64)
        self._neutral = np.asarray(plan.neutral, dtype=np.float64)
        self._joint_w = np.asarray(plan.joint_weight_scalers, dtype=np.float64)
        self._lower = np.asarray(plan.lower, dtype=np.float64)
        self._upper = np.asarray(plan.upper, dtype=np.float64)
        self._clamp = bool(np.isfinite(self._lower).any() or np.isfinite(self._upper).any())
        slide = np.array([d.type == "slide" for j in plan.joints for d in j.dofs], dtype=bool)
        is_pos = np.concatenate([np.arange(r) < min(r, 3), slide])
        self._pos_idx = _as_slice(np.flatnonzero(is_pos))
        self._ang_idx = _as_slice(np.flatnonzero(~is_pos))
        self._buffers: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ helpers
    def _stack(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Preallocated ``(3 m, nv)`` Jacobian and ``(3 m,)`` residual for ``m`` keypoints."""
        buf = self._buffers.get(m)
        if buf is None:
            buf = (np.empty((3 * m, self._nv)), np.empty(3 * m))
            self._buffers[m] = buf
        return buf

    def keypoints(self, q: np.ndarray) -> np.ndarray:
        """Keypoint positions ``(n_joints, 3)`` at configuration ``q`` (forward kinematics)."""
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        return np.array([data.oMf[int(f)].translation for f in self._frame_ids])

    def split(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``q`` -> (dof_value (n_dofs,), root_position (3,), root_orientation (4,) wxyz)."""
        q = np.asarray(q)
        r = self.body.nq_root
        if r == 0:
            return q.copy(), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        x, y, z, w = q[..., 3:7].T
        return q[..., r:].copy(), q[..., :3].copy(), np.stack([w, x, y, z], -1)

    def join(
        self,
        dof_value: np.ndarray,
        root_position: np.ndarray | None = None,
        root_orientation: np.ndarray | None = None,
    ) -> np.ndarray:
        """Pinocchio ``q`` from DOF values and a root pose (quaternion ``w, x, y, z``)."""
        q = self.body.q_neutral.copy()
        r = self.body.nq_root
        q[r:] = dof_value
        if r:
            if root_position is not None:
                q[:3] = root_position
            if root_orientation is not None:
                w, x, y, z = np.asarray(root_orientation, dtype=np.float64)
                quat = np.array([x, y, z, w])
                q[3:7] = quat / np.linalg.norm(quat)
        return q

    # ------------------------------------------------------------------ solve
    def solve(
        self,
        targets: np.ndarray,
        q0: np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> tuple[np.ndarray, int]:
        """Fit one frame.

        Parameters
        ----------
        targets : (n_joints, 3) array
            Keypoint targets; rows with a NaN are missing.
        q0 : (nq,) array, optional
            Start configuration; the neutral pose (root at identity) by default.
        weights : (n_joints,) array, optional
            Observation weights (times each joint's ``weight_scaler``); 1 by default.

        Returns
        -------
        q : (nq,) float64
            The fitted configuration.
        iterations : int
            Gauss-Newton steps taken.
        """
        model, data = self.model, self.data
        targets = np.asarray(targets, dtype=np.float64)
        w = self._joint_w if weights is None else self._joint_w * weights
        obs = np.flatnonzero(np.isfinite(targets).all(axis=1) & (w > 0))
        wrow = np.repeat(w[obs], 3)
        unit = bool((wrow == 1.0).all())
        target = targets[obs].reshape(-1)
        jac, pos = self._stack(len(obs))
        pairs = [(int(f), slice(3 * k, 3 * k + 3)) for k, f in enumerate(self._frame_ids[obs])]
        oMf, get_jacobian = data.oMf, pin.getFrameJacobian
        prior, neutral, r, rv = self._prior, self._neutral, self.body.nq_root, self.body.nv_root
        damping, pos_idx, ang_idx = self.damping, self._pos_idx, self._ang_idx
        q = (self.body.q_neutral if q0 is None else np.asarray(q0, dtype=np.float64)).copy()
        iterations = 0
        for _ in range(self.n_iterations):
            iterations += 1
            pin.computeJointJacobians(model, data, q)  # runs the forward kinematics too
            pin.updateFramePlacements(model, data)
            for fid, rows in pairs:
                jac[rows] = get_jacobian(model, data, fid, _LWA)[:3]
                pos[rows] = oMf[fid].translation
            jw = jac.T if unit else (jac * wrow[:, None]).T
            a = jw @ jac
            g = jw @ (target - pos)
            diag = a.reshape(-1)[:: a.shape[0] + 1]  # writable view of the diagonal
            diag[rv:] += prior
            g[rv:] += prior * (neutral - q[r:])
            diag += damping * np.maximum(diag, 1.0)
            try:
                delta = np.linalg.solve(a, g)
            except np.linalg.LinAlgError:
                break  # singular system: no step, never NaN
            q = pin.integrate(model, q, delta)
            if self._clamp:
                np.clip(q[r:], self._lower, self._upper, out=q[r:])
            absd = np.abs(delta)
            if absd[pos_idx].max(initial=0.0) < self.position_tolerance and (
                absd[ang_idx].max(initial=0.0) < self.angle_tolerance
            ):
                break
        return q, iterations

    def solve_sequence(
        self,
        targets: np.ndarray,
        q0: np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Fit consecutive frames, each warm-started from the previous frame's solution.

        Parameters
        ----------
        targets : (T, n_joints, 3) array
            NaN rows are missing keypoints.
        q0 : (nq,) array, optional
            Start of the first frame; the neutral pose by default.
        weights : (T, n_joints) array, optional

        Returns
        -------
        q : (T, nq) float64
        iterations : (T,) int
        """
        n = len(targets)
        out = np.empty((n, self.model.nq))
        its = np.empty(n, dtype=np.int64)
        q = q0
        for t in range(n):
            q, its[t] = self.solve(targets[t], q, None if weights is None else weights[t])
            out[t] = q
        return out, its


def check_peer(plan: BodyPlan, synthetic: np.ndarray, synthetic_dofs: np.ndarray) -> dict:
    """Known-answer checks of the peer on exactly reachable frames (root at identity).

    Parameters
    ----------
    plan : BodyPlan
    synthetic : (S, n_joints, 3) array
        Targets made by forward kinematics of ``synthetic_dofs`` (NaN rows missing).
    synthetic_dofs : (S, n_dofs) array
        Their DOF values.

    Returns
    -------
    dict
        ``fk_max_error`` (length units): forward kinematics of the known DOFs against the
        targets; ``recovery_max_deg``: the largest angle error of cold solves with the
        neutral prior off; ``recovery_iterations``: their mean iteration count.
    """
    peer = PinGaussNewton(plan, neutral_weight=0.0)
    fk = np.array([peer.keypoints(peer.join(d)) for d in synthetic_dofs])
    fk_err = float(np.nanmax(np.abs(fk - synthetic)))
    errors, its = [], []
    for target, truth in zip(synthetic, synthetic_dofs, strict=True):
        q, n = peer.solve(target)
        d = peer.split(q)[0] - truth
        errors.append(np.abs((d + np.pi) % (2 * np.pi) - np.pi).max())
        its.append(n)
    return {
        "fk_max_error": fk_err,
        "recovery_max_deg": float(np.degrees(max(errors))),
        "recovery_iterations": float(np.mean(its)),
    }
