"""Step values of a coupled model: every transform axis's value from the DOFs.

A compiled model's steps (:mod:`pipeline.kinematics.plan_arrays`) are its joints' DOFs and
driven axes in the order they apply. A DOF's step takes the DOF's value; a driven axis
takes ``f(c)``, with ``c`` a DOF or a coupling (``g(c')``, ``c'`` a DOF or an earlier
coupling). Every chain ends at one DOF (``step_root``), so each step's derivative is one
number per pose: ``d value / d q[step_root]``, the product of the chain's function
derivatives.
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan.functions import evaluate
from pipeline.kinematics.plan_arrays import KinematicModel

__all__ = ["step_values"]


def step_values(model: KinematicModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Values of every step and their derivatives along their root DOF.

    Parameters
    ----------
    model : KinematicModel
    q : (S, N) array
        DOF values.

    Returns
    -------
    values : (S, M) array
        In ``q``'s dtype; ``q`` itself when the model is not coupled.
    derivatives : (S, M) array or None
        ``d values[:, s] / d q[:, step_root[s]]`` (1 for a DOF's own step); None when
        the model is not coupled.
    """
    if not model.coupled:
        return q, None
    s = q.shape[0]
    q64 = np.asarray(q, dtype=np.float64)
    cv: list[np.ndarray] = []
    cd: list[np.ndarray] = []

    def source(src: int) -> tuple[np.ndarray, np.ndarray]:
        if src >= 0:
            return q64[:, src], np.ones(s)
        return cv[-1 - src], cd[-1 - src]

    for fn, src in model.couplings:
        x, dx = source(src)
        value, slope = evaluate(fn, x)
        cv.append(value)
        cd.append(slope * dx)
    values = np.empty((s, model.n_steps))
    deriv = np.ones((s, model.n_steps))
    values[:, model.step_of_dof] = q64
    for step, fn, src in model.driven:
        x, dx = source(src)
        value, slope = evaluate(fn, x)
        values[:, step] = value
        deriv[:, step] = slope * dx
    return values.astype(q.dtype, copy=False), deriv.astype(q.dtype, copy=False)
