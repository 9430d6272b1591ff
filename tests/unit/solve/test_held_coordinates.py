"""A locked coordinate (``lower == upper``) is held out of every step.

Reference: the same body with the locked coordinates baked into their joints' fixed
rotations (no DOF at all). One Gauss-Newton or LM step from the same start must be the
same step on every other coordinate, and the locked ones must not move. One lock is on
the separator of the block-arrow system, one inside a block.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.plan_arrays import compile_plan
from pipeline.kinematics.rotations import rotvec_to_quat
from pipeline.solve import SolverConfig, solve_frames
from pipeline.solve.limits import held, held_coordinates
from pipeline.solve.numpy.tables import block_layout

LOCK = np.array([0.3, -0.2])  # rad, the locked hinges' values
AT = [2, 5]  # their DOF indices in the locked plan


def _joint(name, parent, offset, dofs=(), quat=(1.0, 0.0, 0.0, 0.0)):
    return {
        "name": name,
        "parent": parent,
        "offset_pos": list(offset),
        "offset_quat": list(quat),
        "dofs": list(dofs),
    }


def _hinge(axis, limits=None, neutral=0.0):
    return {"type": "hinge", "axis": list(axis), "neutral": neutral, "limits": limits}


def plans():
    """A free-base arm with two locked hinges, and the same arm with them baked in."""
    joints = []
    for locked in (True, False):

        def lock(i, axis, locked=locked):
            if locked:
                return [_hinge(axis, [LOCK[i], LOCK[i]], LOCK[i])], (1.0, 0.0, 0.0, 0.0)
            return [], tuple(rotvec_to_quat(LOCK[i] * np.asarray(axis, float)))

        b_dofs, b_quat = lock(0, [0, 1, 0])
        d_dofs, d_quat = lock(1, [1, 0, 0])
        joints.append(
            [
                _joint("root", None, (0, 0, 0)),
                _joint("a", "root", (0.3, 0, 0), [_hinge([0, 0, 1]), _hinge([1, 0, 0])]),
                _joint("b", "a", (0.4, 0, 0), b_dofs, b_quat),
                _joint("c", "b", (0.4, 0.05, 0), [_hinge([0, 0, 1]), _hinge([0, 1, 0])]),
                _joint("d", "c", (0.3, 0, 0.05), d_dofs, d_quat),
                _joint("e", "d", (0.2, 0.05, 0), [_hinge([0, 0, 1])]),
                _joint("g", "e", (0.2, 0.0, 0.05)),
                _joint("f", "b", (0.1, 0.1, 0.1)),
            ]
        )
    return tuple(load_body_plan({"fixed_base": False, "joints": j}) for j in joints)


def _insert(q):
    return np.insert(q, [2, 4], LOCK, axis=1)


@pytest.fixture(scope="module")
def problem():
    locked, baked = plans()
    rng = np.random.default_rng(3)
    q = rng.normal(0, 0.5, (6, baked.n_dofs))
    root_pos = rng.normal(0, 0.1, (6, 3))
    quat = rng.normal(size=(6, 4))
    root_quat = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    targets = forward_kinematics(baked, q, root_pos, root_quat)
    targets = targets + rng.normal(0, 0.05, targets.shape)  # unreachable: residual at the answer
    with_lock = _insert(q)
    # the two plans are one body
    np.testing.assert_allclose(
        forward_kinematics(locked, with_lock, root_pos, root_quat),
        forward_kinematics(baked, q, root_pos, root_quat),
        atol=1e-12,
    )
    start = rng.normal(0, 0.3, q.shape)
    initial = {
        "root_position": root_pos + 0.05,
        "root_orientation": root_quat,
        "dof_value": _insert(start),
    }
    base = {**initial, "dof_value": start}
    return locked, baked, targets, initial, base


def test_the_locks_are_on_the_separator_and_in_a_block():
    lay = block_layout(compile_plan(plans()[0]))
    assert lay.sep_held.size == 1 and lay.blk_held.sum() == 1


def test_the_rule():
    assert held(0.3, 0.3) and not held(-1.0, 1.0) and not held(-np.inf, np.inf)
    np.testing.assert_array_equal(
        held_coordinates(np.array([0.0, -1.0, 2.0]), np.array([0.0, 1.0, 2.0])),
        [True, False, True],
    )


def _one_step(engine, problem, mode):
    locked, baked, targets, initial, base = problem
    cfg = (
        SolverConfig.quickik(n_iterations=1, engine=engine)
        if mode == "gn"
        else SolverConfig(n_iterations=1, engine=engine, restarts=0)
    )
    a = solve_frames(locked, targets, config=cfg, initial=initial)
    b = solve_frames(baked, targets, config=cfg, initial=base)
    return a, b


def _assert_same_step(a, b):
    assert (a.dof_value[:, AT] == LOCK).all()  # the locked coordinates did not move
    np.testing.assert_allclose(np.delete(a.dof_value, AT, axis=1), b.dof_value, atol=1e-10)
    np.testing.assert_allclose(a.root_position, b.root_position, atol=1e-10)
    assert not a.limit_active[:, AT].any()  # never moved, so never clamped back


@pytest.mark.parametrize("mode", ["gn", "lm"])
def test_numpy_engine_steps_as_if_the_coordinate_were_not_there(problem, mode):
    _assert_same_step(*_one_step("numpy", problem, mode))


def test_compiled_engine_steps_as_if_the_coordinate_were_not_there(problem):
    _assert_same_step(*_one_step("compiled", problem, "gn"))


def test_numpy_engine_fits_the_locked_body_as_the_baked_one(problem):
    locked, baked, targets, initial, base = problem
    cfg = SolverConfig(engine="numpy")
    a = solve_frames(locked, targets, config=cfg)
    b = solve_frames(baked, targets, config=cfg)
    assert (a.stop_reason == 0).all() and (b.stop_reason == 0).all()
    assert (a.dof_value[:, AT] == LOCK).all()
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-6)
    assert a.iterations.sum() <= b.iterations.sum() + len(a.iterations)
