"""The steps and coupling functions of a body plan as flat arrays for the compiled kernels.

A coupled plan's joints apply *steps* (:mod:`pipeline.kinematics.steps`): their DOFs and
their driven axes. Each driven step's value is a chain of one-argument functions of one
DOF (innermost first: the couplings it goes through, then its own function); the
functions are stored once each as a kind code and a block of rows of one knot table,
which :mod:`pipeline.solve.compiled.driven` evaluates as
:func:`pipeline.bodyplan.functions.evaluate` does (the spline coefficients are those
:mod:`pipeline.bodyplan.functions` computes, OpenSim's ``SimmSpline`` fit).

Function kinds: ``LINEAR`` (``y = [slope, intercept]``), ``CONSTANT`` (``y = [value]``),
``POLYNOMIAL`` (``y`` the coefficients, decreasing powers) and ``KNOTS`` (a spline or a
piecewise-linear function: knots ``x``, ``y`` and per-knot cubic coefficients ``b``,
``c``, ``d``; ``c = d = 0`` for a piecewise-linear one). A ``MultiplierFunction`` is its
inner function with ``scale`` the product of the factors.

The tables are packed into a few contiguous arrays, built once per plan: one integer row
and one float row per step (columns ``STEP_*`` and ``axis x, y, z, sign``), one integer
row per function (``FN_*``) and the knot table (columns ``KNOT_*``; the coefficients of
the other kinds in its ``KNOT_Y`` column). The kernels read them through a handful of
array arguments: each array a compiled helper takes costs it a reference-count update
that the compiler does not always remove, so twenty separate tables handed to the
helpers inside the step loop cost more than the kinematics.
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan.functions import Function
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.plan_arrays import HINGE, SLIDE, _aligned_axis, compile_plan
from pipeline.kinematics.step_groups import step_groups

__all__ = [
    "CONSTANT",
    "FN_COUNT",
    "FN_KIND",
    "FN_START",
    "KNOTS",
    "KNOT_B",
    "KNOT_C",
    "KNOT_D",
    "KNOT_X",
    "KNOT_Y",
    "LINEAR",
    "POLYNOMIAL",
    "STEP_ALIGNED",
    "STEP_CHAIN",
    "STEP_CHAIN_END",
    "STEP_OWN",
    "STEP_ROOT",
    "STEP_SCREW",
    "STEP_TYPE",
    "step_tables",
]

LINEAR, CONSTANT, POLYNOMIAL, KNOTS = 0, 1, 2, 3
#: Columns of ``step_int``: the step's type, the coordinate axis of an aligned hinge (else
#: -1), the DOF of a DOF's own step (else -1), its root DOF, its screw group (-1: none),
#: and its slice ``chain_fn[STEP_CHAIN:STEP_CHAIN_END]`` of function ids.
STEP_TYPE, STEP_ALIGNED, STEP_OWN, STEP_ROOT, STEP_SCREW, STEP_CHAIN, STEP_CHAIN_END = range(7)
#: Columns of ``fn_int``: the kind, the function's first row of ``fn_knots`` and its rows.
FN_KIND, FN_START, FN_COUNT = range(3)
#: Columns of ``fn_knots``.
KNOT_X, KNOT_Y, KNOT_B, KNOT_C, KNOT_D = range(5)


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
    """``fn_int`` (F, 3), ``fn_scale`` (F,) and ``fn_knots`` (K, 5) of ``fns``."""
    rows: list[list[float]] = []
    ints, scales = [], []
    for fn in fns:
        kind, scale, x, y, b, c, d = _flat(fn)
        width = len(y)
        ints.append((kind, len(rows), width))
        scales.append(scale)
        cols = [list(v) + [0.0] * (width - len(v)) for v in (x, y, b, c, d)]
        rows.extend(list(r) for r in zip(*cols, strict=True))
    return {
        "fn_int": np.array(ints, np.int64).reshape(-1, 3),
        "fn_scale": np.array(scales, np.float64),
        "fn_knots": np.array(rows, np.float64).reshape(-1, 5),
    }


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
        ``coupled``; ``step_start`` (J + 1: joint ``j``'s steps); per step ``step_int``
        (M, 7; columns ``STEP_*``, the screw groups those of
        :class:`~pipeline.kinematics.step_groups.StepGroups`) and ``step_real`` (M, 4: the
        axis and its sign); ``chain_fn`` (function ids, innermost first); ``fn_int``,
        ``fn_scale``, ``fn_knots`` (module docstring); ``extra_start`` (N + 1) and
        ``extra_joint``. An uncoupled plan has no steps (its kernels walk the DOFs).
    """
    m = compile_plan(plan, np.float64)
    if not m.coupled:
        return {
            "coupled": False,
            "step_start": np.zeros(m.n_joints + 1, np.int64),
            "step_int": np.zeros((0, 7), np.int64),
            "step_real": np.zeros((0, 4), np.float64),
            "chain_fn": np.zeros(0, np.int64),
            **_functions([]),
            "extra_start": np.zeros(m.n_dofs + 1, np.int64),
            "extra_joint": np.zeros(0, np.int64),
        }
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
    chain_start = np.concatenate([[0], np.cumsum([len(c) for c in chains])]).astype(np.int64)
    step_int = np.stack(
        [m.step_type.astype(np.int64), aligned, own, m.step_root.astype(np.int64),
         groups.screw.astype(np.int64), chain_start[:-1], chain_start[1:]], axis=1,
    )  # fmt: skip
    step_real = np.concatenate(
        [np.asarray(m.step_axis, np.float64).reshape(-1, 3),
         np.asarray(m.step_sign, np.float64).reshape(-1, 1)], axis=1,
    )  # fmt: skip
    return {
        "coupled": True,
        "step_start": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        "step_int": np.ascontiguousarray(step_int, np.int64),
        "step_real": np.ascontiguousarray(step_real, np.float64),
        "chain_fn": np.array([f for c in chains for f in c], np.int64),
        **_functions(fns),
        "extra_start": groups.extra_start,
        "extra_joint": groups.extra_joint,
    }
