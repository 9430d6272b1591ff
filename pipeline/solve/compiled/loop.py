"""What the frame loops of both compiled kernels share, besides the rules.

The 3D kernel (:mod:`.frames`) and the projection kernel (:mod:`.projection`) differ in
their objective and normal equations only; each frame starts (:func:`start_pose`) and each
step is damped (:func:`damp_system`) the same way in both, and both take the accept,
damping and stop decisions of :mod:`pipeline.solve.rules`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from pipeline.solve.compiled.bundles import Inputs, Outputs, Settings, Workspace
from pipeline.solve.compiled.pose import copy, warm_start
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.limits import at_limit, held
from pipeline.solve.rules import INLINE

#: A held coordinate's diagonal, relative to its own (see :func:`damp_system`).
HELD_STIFFNESS = 1.0e12

__all__ = ["damp_system", "hold_step", "start_pose", "task_row"]


@nb.njit(**INLINE)
def start_pose(tb: Tables, inp: Inputs, cfg: Settings, ws: Workspace, out: Outputs, t: int) -> int:
    """Load frame ``t``'s start pose into ``ws.q``, ``ws.rp``, ``ws.rq``.

    With ``cfg.chained`` a frame that is not ``inp.cold`` starts from the solutions before
    it in ``out`` (with ``cfg.velocity``: a constant-velocity prediction); any other frame
    from its row of ``inp.init_*`` (the only row when there is one).

    Returns
    -------
    int
        The row of ``inp.init_*`` the frame starts from; -1 when warm-started.
    """
    if cfg.chained and not inp.cold[t]:
        velocity = cfg.velocity and t >= 2 and not inp.cold[t - 1]
        warm_start(tb, out.dof_value, out.root_position, out.root_orientation, t, velocity,
                   ws.q, ws.rp, ws.rq, ws.act_new)  # fmt: skip
        return -1
    i0 = 0 if inp.init_q.shape[0] == 1 else t
    copy(inp.init_q[i0], ws.q)
    copy(inp.init_root_pos[i0], ws.rp)
    copy(inp.init_root_quat[i0], ws.rq)
    return i0


@nb.njit(**INLINE)
def damp_system(
    tb: Tables,
    hd: np.ndarray,
    g: np.ndarray,
    q: np.ndarray,
    prior: np.ndarray,
    lam: float,
    angle_floor: float,
    task_weight: np.ndarray,
    task_target: np.ndarray,
    bound: np.ndarray,
    limits: bool,
) -> None:
    """Add the neutral prior, coordinate tasks and relative damping to a normal system.

    The damping is ``lam * max(A_ii, floor)`` after the prior, with ``floor`` 1 for the
    root's position and for slides, ``angle_floor`` for angles
    (:mod:`pipeline.solve.rules`' **Step** rule).

    Parameters
    ----------
    tb : Tables
    hd, g : (n_state,)
        The normal matrix's diagonal and the gradient, updated in place.
    q : (N,)
        The pose's DOF values (the prior pulls them to ``tb.neutral``).
    prior : (N,)
        The neutral prior's diagonal.
    lam : float
        The relative damping.
    angle_floor : float
        The effective ``SolverConfig.angle_floor``.
    task_weight, task_target : (N,)
        Coordinate-task weights (0: none) and the frame's targets: ``w (q - target)^2``
        joins the prior (:mod:`pipeline.solve.tasks`).
    bound : (N,) bool, out
        The coordinates held at a limit for this step (:func:`pipeline.solve.limits.at_limit`),
        held like a locked one; :func:`hold_step` and ``apply_step`` read it.
    limits : bool
        Hold coordinates at a limit (``lm`` mode; ``gn`` keeps QuickIK's clamp only).

    Notes
    -----
    A held coordinate (:func:`pipeline.solve.limits.held`, locked) gets a zero gradient
    and a diagonal :data:`HELD_STIFFNESS` times its own, which takes it out of the step:
    the other coordinates solve as if it were not there (to a relative 1e-12), and
    :func:`hold_step` zeroes its own entry of the solved step. The tree-structured system
    keeps its off-diagonal entries, so this is the compiled form of the numpy engine's
    identity rows.
    """
    nr = tb.n_root
    for s in range(nr):
        hd[s] += lam * max(hd[s], 1.0 if s < 3 else angle_floor)
    for k in range(tb.dof_type.shape[0]):
        s = nr + k
        d = hd[s] + prior[k] + task_weight[k]
        hd[s] = d + lam * max(d, angle_floor if tb.angular[k] else 1.0)
        g[s] -= prior[k] * (q[k] - tb.neutral[k]) + task_weight[k] * (q[k] - task_target[k])
        lo, hi = tb.lower[k], tb.upper[k]
        bound[k] = limits and not held(lo, hi) and at_limit(q[k], lo, hi, g[s])
        if bound[k] or held(lo, hi):
            g[s] = 0.0
            hd[s] = HELD_STIFFNESS * (hd[s] + 1.0)


@nb.njit(**INLINE)
def hold_step(tb: Tables, step: np.ndarray, bound: np.ndarray) -> None:
    """Zero the held coordinates' entries of a solved step (:func:`damp_system`'s Notes).

    Parameters
    ----------
    tb : Tables
    step : (n_state,)
        The step, updated in place: a held coordinate never moves, so it is never clamped.
    bound : (N,) bool
        The coordinates :func:`damp_system` held at a limit.
    """
    for k in range(tb.dof_type.shape[0]):
        if bound[k] or held(tb.lower[k], tb.upper[k]):
            step[tb.n_root + k] = 0.0


@nb.njit(**INLINE)
def task_row(inp: Inputs, t: int) -> np.ndarray:
    """Frame ``t``'s coordinate-task targets ``(N,)`` (``Inputs.task_target``)."""
    return inp.task_target[t if inp.task_target.shape[0] > 1 else 0]
