"""Projection of DOF values onto the body plan's limits (clamp on write)."""

from __future__ import annotations

import numpy as np

from pipeline.kinematics.model import KinematicModel

__all__ = ["clamp"]


def clamp(
    model: KinematicModel, q: np.ndarray, wrap: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Clamp DOF values to their limits, in place of ``q``'s copy.

    Box limits clip each coordinate. With ``wrap``, an unbounded angle (a hinge or twist
    without limits) is wrapped into ``neutral +- pi``: the same rotation, so sequences
    cannot wind up by whole turns (the solver wraps when it starts a frame, never inside
    one, where the neutral prior is not periodic). A ball joint's swing rotation vector is
    first
    wrapped to an angle of at most pi (the same rotation), then projected radially onto
    its elliptical cone ``(s1 / a1)^2 + (s2 / a2)^2 <= 1``.

    Parameters
    ----------
    model : KinematicModel
    q : (S, N) array
    wrap : bool
        Wrap unbounded angles into ``neutral +- pi``.

    Returns
    -------
    q : (S, N) array
        Clamped values.
    active : (S, N) bool array
        True where the clamp moved the value.
    """
    out = np.clip(q, model.lower, model.upper)
    active = out != q
    free = model.free_angles
    if wrap and free.size:
        rel = out[:, free] - model.neutral[free]
        out[:, free] = model.neutral[free] + (rel + np.pi) % (2 * np.pi) - np.pi
    if model.ball_swing.size:
        sw = out[:, model.ball_swing]  # (S, nb, 2)
        theta = np.sqrt(np.sum(sw * sw, axis=-1, keepdims=True))
        wrap = theta > np.pi
        sw = np.where(wrap, sw * (theta - 2 * np.pi) / np.where(wrap, theta, 1.0), sw)
        cone = model.ball_cone
        e = np.sum((sw / cone) ** 2, axis=-1, keepdims=True)
        # a tolerance of a few ulps keeps the projection idempotent under round-off
        outside = e > 1.0 + 16 * np.finfo(out.dtype).eps
        sw = np.where(outside, sw / np.sqrt(np.where(outside, e, 1.0)), sw)
        out[:, model.ball_swing] = sw
        active[:, model.ball_swing] |= outside
    return out, active
