"""The steps of a body plan: its joints' DOFs and driven axes, in the order they apply.

Each step's value is a function of exactly one DOF (its root): a DOF's own step is the
DOF; a driven axis is a function of a DOF or of a coupling, which is a function of a DOF
or of an earlier coupling.
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan.functions import Function
from pipeline.bodyplan.model import BodyPlan, DrivenAxis

__all__ = ["Steps"]


class Steps:
    """How each step's value follows from the DOFs.

    Attributes
    ----------
    root : (M,) int
        The DOF each step's value is a function of.
    of_dof : (N,) int
        Each DOF's own step.
    driven : tuple of (step, Function, source)
        ``source`` a DOF index (``>= 0``) or coupling ``-1 - i``.
    couplings : tuple of (Function, source)
    """

    def __init__(self, plan: BodyPlan) -> None:
        dof_index = {name: k for k, name in enumerate(plan.dof_names)}
        source: dict[str, int] = dict(dof_index)
        roots = list(range(plan.n_dofs))
        couplings: list[tuple[Function, int]] = []
        for i, c in enumerate(plan.couplings):
            src = source[c.coordinate]
            couplings.append((c.function, src))
            roots.append(roots[src] if src >= 0 else roots[plan.n_dofs - 1 - src])
            source[c.name] = -1 - i
        root_of = dict(zip(plan.dof_names, range(plan.n_dofs), strict=True))
        for i, c in enumerate(plan.couplings):
            root_of[c.name] = roots[plan.n_dofs + i]
        step_root, of_dof, driven = [], [], []
        k = 0
        for joint in plan.joints:
            for axis in joint.axes:
                s = len(step_root)
                if isinstance(axis, DrivenAxis):
                    step_root.append(root_of[axis.coordinate])
                    driven.append((s, axis.function, source[axis.coordinate]))
                else:
                    step_root.append(k)
                    of_dof.append(s)
                    k += 1
        self.root = np.array(step_root, dtype=np.intp)
        self.of_dof = np.array(of_dof, dtype=np.intp)
        self.driven = tuple(driven)
        self.couplings = tuple(couplings)
