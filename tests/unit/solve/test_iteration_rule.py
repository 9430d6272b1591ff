"""One iteration rule: the LM accept test, damping update and stop decision exist once.

:mod:`pipeline.solve.rules` defines them (:func:`~pipeline.solve.rules.accepts`,
:func:`~pipeline.solve.rules.next_damping`, :func:`~pipeline.solve.rules.stop_reason`);
the 3D kernel, the projection kernel and the numpy engine's lanes call them. The source
tests read the modules with :mod:`ast`, so they hold for any build; the behaviour tests
check the rule against its statement, case by case, and the lane form against the scalar
one.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import numpy as np
import pytest

import pipeline
from pipeline.solve import rules
from pipeline.solve.rules import (
    CONVERGED,
    LM_GROW,
    LM_MAX_DAMPING,
    LM_SHRINK,
    MAX_ITERATIONS,
    STALLED,
    accepts,
    lane_rules,
    next_damping,
    stop_reason,
)

ROOT = Path(pipeline.__file__).parent
SOLVE = ROOT / "solve"
#: The three iteration loops and the functions that hold them.
LOOPS = {
    "compiled/frames.py": "solve_frames_kernel",
    "compiled/projection.py": "_kernel",
    "numpy/frames.py": "_iterate_lanes",
}
#: The rule's constants: only the rule's own module may read them.
RULE_CONSTANTS = {"LM_SHRINK", "LM_GROW", "LM_MAX_DAMPING", "FLAT_RTOL", "FLAT_FLOOR"}


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{path}: {name}"
    return found[0]


def _called(node: ast.AST) -> set[str]:
    return {
        n.func.id if isinstance(n.func, ast.Name) else n.func.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)
    }


def _names(path: Path) -> set[str]:
    """Every name a module reads, imports or assigns."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.alias):
            out.add(n.asname or n.name)
    return out


@pytest.mark.parametrize("module", ["compiled/frames.py", "compiled/projection.py"])
def test_both_compiled_kernels_call_the_shared_rule_and_damping(module):
    calls = _called(_function(SOLVE / module, LOOPS[module]))
    assert {"accepts", "next_damping", "stop_reason", "damp_system"} <= calls


@pytest.mark.parametrize(
    ("module", "function", "rule"),
    [
        ("compiled/frames.py", "solve_frames_kernel", "small_update"),
        ("compiled/projection.py", "_kernel", "small_update"),
        ("compiled/lane_frames.py", "solve_lanes_kernel", "small_update"),
        ("numpy/frames.py", "_iterate_lanes", "lane_small_updates"),
        ("rules.py", "lane_small_updates", "small_update"),
    ],
)
def test_every_loop_decides_small_with_the_shared_rule(module, function, rule):
    """``SolverConfig.tolerance_on`` is read in one function; every loop asks it."""
    assert rule in _called(_function(SOLVE / module, function))
    text = (SOLVE / module).read_text()
    assert "< cfg.angle_tolerance" not in text and "< cfg.position_tolerance" not in text


def test_the_numpy_lanes_call_the_shared_rule_and_it_calls_the_scalar_rule():
    assert "lane_rules" in _called(_function(SOLVE / "numpy/frames.py", LOOPS["numpy/frames.py"]))
    lanes = _function(SOLVE / "rules.py", "lane_rules")
    assert {"accepts", "next_damping", "stop_reason"} <= _called(lanes)


def test_no_other_module_reimplements_the_damping_update_or_the_stop_rule():
    modules = [p for p in ROOT.rglob("*.py") if p != SOLVE / "rules.py"]
    assert len(modules) > 100
    readers = {p.relative_to(ROOT).as_posix(): sorted(RULE_CONSTANTS & _names(p)) for p in modules}
    assert {k: v for k, v in readers.items() if v} == {}
    # the update's arithmetic ``lam * <factor>`` is in rules.py only; the relative damping of
    # the normal matrix (``lam * max(A_ii, floor)``) in compiled/loop.py and numpy/normal.py
    damping = {"compiled/loop.py", "numpy/normal.py"}
    products = []
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.BinOp | ast.AugAssign) and isinstance(n.op, ast.Mult):
                operands = [n.left, n.right] if isinstance(n, ast.BinOp) else [n.target, n.value]
                if any(isinstance(o, ast.Name) and o.id == "lam" for o in operands):
                    products.append(rel)
    assert products and set(products) <= {f"solve/{m}" for m in damping}


def test_each_kernel_takes_named_bundles():
    frames = _function(SOLVE / "compiled/frames.py", "solve_frames_kernel")
    proj = _function(SOLVE / "compiled/projection.py", "_kernel")
    precision = _function(SOLVE / "compiled/precision.py", "frame_precision")
    assert [a.arg for a in frames.args.args] == ["tb", "inp", "cfg", "ws", "out"]
    assert [a.arg for a in proj.args.args] == ["tb", "cam", "inp", "cfg", "ws", "px", "out"]
    assert [a.arg for a in precision.args.args] == ["tb", "ws", "out", "t", "prior"]


def test_no_front_end_imports_private_solver_functions():
    offenders = []
    for path in [*ROOT.rglob("*.py"), *(ROOT.parent / "flows").rglob("*.py")]:
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module in {
                "pipeline.solve.solver",
                "pipeline.solve.dispatch",
            }:
                offenders += [f"{path}: {a.name}" for a in n.names if a.name.startswith("_")]
    assert offenders == []


def test_the_accept_test():
    assert accepts(False, True, 2.0, 2.0)  # a step that does not raise the objective
    assert not accepts(False, True, 2.0, 2.0 + 1e-12)
    assert accepts(True, True, 2.0, 5.0)  # gn takes every finite step
    assert not accepts(True, False, 2.0, 1.0) and not accepts(False, False, 2.0, 1.0)


def test_the_damping_update():
    assert next_damping(False, 1e-3, True, 1e-6) == 1e-3 * LM_SHRINK
    assert next_damping(False, 1e-6, True, 1e-6) == 1e-6  # floored at the damping
    assert next_damping(False, 1e-3, False, 1e-6) == 1e-3 * LM_GROW
    assert next_damping(True, 1e-3, False, 1e-6) == 1e-3  # gn keeps its damping


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # gn, finite, small, accepted, cost, cand, lam, cost_tolerance
        ((True, True, True, True, 1.0, 1.0, 0.0, 0.0), (CONVERGED, True)),
        ((True, True, False, True, 1.0, 1.0, 0.0, 0.0), (MAX_ITERATIONS, False)),
        ((True, False, True, False, 1.0, 1.0, 0.0, 0.0), (STALLED, False)),
        ((False, False, True, False, 1.0, 0.5, 1e-3, 0.0), (STALLED, False)),
        ((False, True, True, True, 1.0, 0.5, 1e-3, 0.0), (CONVERGED, True)),
        ((False, True, True, False, 1.0, 1.5, 1e-3, 0.0), (MAX_ITERATIONS, False)),
        ((False, True, False, True, 1.0, 0.5, 1e-3, 0.6), (CONVERGED, True)),  # small gain
        ((False, True, False, True, 1.0, 0.5, 1e-3, 0.4), (MAX_ITERATIONS, False)),
        ((False, True, False, False, 1.0, 1.0 + 1e-15, 1e-3, 0.0), (CONVERGED, True)),  # flat
        ((False, True, False, False, 1.0, 2.0, 2 * LM_MAX_DAMPING, 0.0), (STALLED, True)),
    ],
)
def test_the_stop_decision(args, expected):
    assert tuple(stop_reason(*args)) == expected


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_lane_form_is_the_scalar_rule_on_every_lane(dtype):
    cases = list(itertools.product([False, True], [False, True], [0.5, 1.0, 1.0 + 1e-15, 2.0]))
    finite = np.array([c[0] for c in cases])
    small = np.array([c[1] for c in cases])
    cand = np.array([c[2] for c in cases], dtype)
    cost = np.ones(len(cases), dtype)
    lam = np.geomspace(1e-4, 1e11, len(cases)).astype(dtype)
    for gn in (False, True):
        accepted, new_lam, reason, done = lane_rules(gn, finite, small, cost, cand, lam, 1e-6, 0.1)
        assert reason.dtype == np.int8 and new_lam.dtype == dtype
        for i in range(len(cases)):
            c, d, la = float(cost[i]), float(cand[i]), float(lam[i])
            a = accepts(gn, finite[i], c, d)
            step_lam = next_damping(gn, la, a, 1e-6)
            want = stop_reason(gn, finite[i], small[i], a, c, d, step_lam, 0.1)
            assert accepted[i] == a
            assert new_lam[i] == dtype(step_lam)
            assert (reason[i], done[i]) == tuple(want)


def test_the_rules_module_states_the_three_rules_it_defines():
    assert {"accepts", "next_damping", "stop_reason", "lane_rules"} <= set(rules.__all__)
