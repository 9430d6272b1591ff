"""The steps and coupling functions of a body plan as flat arrays for the compiled kernels.

A coupled plan's joints apply *steps* (:mod:`pipeline.kinematics.steps`): their DOFs and
their driven axes. Each driven step's value is a chain of one-argument functions of one
DOF (innermost first: the couplings it goes through, then its own function); the
functions are stored once each as a kind code and a slice of flat knot and coefficient
arrays, which :mod:`pipeline.solve.compiled.driven` evaluates as
:func:`pipeline.bodyplan.functions.evaluate` does (the spline coefficients are those
:mod:`pipeline.bodyplan.functions` computes, OpenSim's ``SimmSpline`` fit).

Function kinds: ``LINEAR`` (``y = [slope, intercept]``), ``CONSTANT`` (``y = [value]``),
``POLYNOMIAL`` (``y`` the coefficients, decreasing powers) and ``KNOTS`` (a spline or a
piecewise-linear function: knots ``x``, ``y`` and per-knot cubic coefficients ``b``,
``c``, ``d``; ``c = d = 0`` for a piecewise-linear one). A ``MultiplierFunction`` is its
inner function with ``scale`` the product of the factors.
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan.functions import Function
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.plan_arrays import HINGE, SLIDE, _aligned_axis, compile_plan
from pipeline.kinematics.step_groups import step_groups

__all__ = ["CONSTANT", "KNOTS", "LINEAR", "POLYNOMIAL", "step_tables"]

LINEAR, CONSTANT, POLYNOMIAL, KNOTS = 0, 1, 2, 3


def _flat(fn: Function, scale: float = 1.0) -> tuple[int, float, list, list, list, list, list]:
    """``(kind, scale, x, y, b, c, d)`` of ``fn``."""
    t = fn.type
    if t == "MultiplierFunction":
        assert fn.function is not None
        return _flat(fn.function, scale * fn.scale)
    if t == "LinearFunction":
        return LINEAR, scale, [], list(fn.coefficients), [], [], []
    if t == "Constant":
        return CONSTANT, scale, [], [fn.value], [], [], []
    if t == "PolynomialFunction":
        return POLYNOMIAL, scale, [], list(fn.coefficients), [], [], []
    n = len(fn.x)
    if t == "PiecewiseLinearFunction":
        b, c, d = fn._slopes, np.zeros(n), np.zeros(n)
    else:
        b, c, d = fn._spline
    return KNOTS, scale, list(fn.x), list(fn.y), list(b), list(c), list(d)


def _functions(fns: list[Function]) -> dict[str, np.ndarray]:
    kinds, scales, start = [], [], [0]
    cols: dict[str, list[float]] = {"x": [], "y": [], "b": [], "c": [], "d": []}
    for fn in fns:
        kind, scale, x, y, b, c, d = _flat(fn)
        kinds.append(kind)
        scales.append(scale)
        width = len(y)
        for name, vals in zip("xybcd", (x, y, b, c, d), strict=True):
            cols[name].extend(list(vals) + [0.0] * (width - len(vals)))
        start.append(start[-1] + width)
    out = {f"fn_{k}": np.array(v, np.float64) for k, v in cols.items()}
    out["fn_kind"] = np.array(kinds, np.int64)
    out["fn_scale"] = np.array(scales, np.float64)
    out["fn_start"] = np.array(start, np.int64)
    return out


def step_tables(plan: BodyPlan) -> dict[str, np.ndarray | bool]:
    """:func:`_step_tables` with every array a writable copy.

    numba types read-only arrays apart from writable ones, so tables mixing them would
    compile the kernels twice.
    """
    return {k: v if isinstance(v, bool) else np.array(v) for k, v in _step_tables(plan).items()}


def _step_tables(plan: BodyPlan) -> dict[str, np.ndarray | bool]:
    """The step, chain, function and extra-group fields of ``Tables`` for ``plan``.

    Returns
    -------
    dict
        ``coupled``; per step ``step_start`` (J + 1), ``step_type``, ``step_axis``,
        ``step_aligned``, ``step_sign``, ``step_own`` (the DOF of a DOF's own step, else
        -1), ``step_root``, ``step_screw`` (:class:`~pipeline.kinematics.step_groups.StepGroups`);
        ``chain_start`` (M + 1) and ``chain_fn`` (function ids, innermost first);
        ``fn_*`` (module docstring); ``extra_start`` (N + 1) and ``extra_joint``. An
        uncoupled plan has no steps (its kernels walk the DOFs).
    """
    m = compile_plan(plan, np.float64)
    if not m.coupled:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0, np.float64)
        out: dict = {
            "coupled": False,
            "step_start": np.zeros(m.n_joints + 1, np.int64),
            "step_axis": np.zeros((0, 3)),
            "step_sign": empty_f,
            "chain_start": np.zeros(1, np.int64),
            **_functions([]),
            "extra_start": np.zeros(m.n_dofs + 1, np.int64),
        }
        for k in ("step_type", "step_aligned", "step_own", "step_root", "step_screw"):
            out[k] = empty_i
        out["chain_fn"] = out["extra_joint"] = empty_i
        return out
    groups = step_groups(plan)
    counts = [len(j.axes) for j in plan.joints]
    ids: dict[int, int] = {}
    fns: list[Function] = []

    def fid(fn: Function) -> int:
        if id(fn) not in ids:
            ids[id(fn)] = len(fns)
            fns.append(fn)
        return ids[id(fn)]

    own = np.full(m.n_steps, -1, np.int64)
    own[m.step_of_dof] = np.arange(m.n_dofs)
    chains: list[list[int]] = [[] for _ in range(m.n_steps)]
    for s, fn, src in m.driven:
        chain = [fid(fn)]
        while src < 0:
            cfn, src = m.couplings[-1 - src]
            chain.append(fid(cfn))
        chains[s] = chain[::-1]
    aligned = np.array(
        [_aligned_axis(np.asarray(a)) if t == HINGE else -1
         for a, t in zip(m.step_axis, m.step_type, strict=True)], np.int64,
    )  # fmt: skip
    assert np.isin(m.step_type[own < 0], (HINGE, SLIDE)).all()
    return {
        "coupled": True,
        "step_start": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        "step_type": m.step_type.astype(np.int64),
        "step_axis": np.ascontiguousarray(m.step_axis, np.float64),
        "step_aligned": aligned,
        "step_sign": np.ascontiguousarray(m.step_sign, np.float64),
        "step_own": own,
        "step_root": m.step_root.astype(np.int64),
        "step_screw": groups.screw.astype(np.int64),
        "chain_start": np.concatenate([[0], np.cumsum([len(c) for c in chains])]).astype(np.int64),
        "chain_fn": np.array([f for c in chains for f in c], np.int64),
        **_functions(fns),
        "extra_start": groups.extra_start,
        "extra_joint": groups.extra_joint,
    }
