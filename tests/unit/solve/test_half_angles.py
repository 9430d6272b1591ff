"""The compiled kernel's hinge trigonometry: half angles advanced along solver steps.

:func:`pipeline.solve.compiled.forward.advance_half_angles` turns a known
``(cos(q/2), sin(q/2))`` by a step with the addition formulas and a Taylor series for
half-steps up to ``TAYLOR_HALF_STEP``, and calls the library beyond it. Checked against
``numpy.cos``/``numpy.sin`` of the new angles on both sides of that threshold, and along
a chain of many small steps (the rounding it adds per step stays at a few ulps).
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.compiled.forward import TAYLOR_HALF_STEP, advance_half_angles, half_angles


def _exact(q: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(0.5 * q), np.sin(0.5 * q)])


def test_one_step_matches_the_library_on_both_sides_of_the_threshold():
    rng = np.random.default_rng(0)
    q = rng.uniform(-3.0, 3.0, 64)
    limit = 2.0 * TAYLOR_HALF_STEP  # full-step size at the series' threshold
    for size in (0.0, 1e-12, 1e-6, 1e-3, 0.5 * limit, 0.999 * limit, 1.001 * limit, 0.5, 2.5):
        steps = size * rng.choice([-1.0, 1.0], q.size)
        q_new = q + steps
        half, new = np.empty((2, q.size)), np.empty((2, q.size))
        half_angles(q, half)
        advance_half_angles(q, q_new, half, new)
        np.testing.assert_allclose(new, _exact(q_new), rtol=0, atol=4e-16, err_msg=str(size))


def test_a_zero_step_keeps_the_values_exactly():
    q = np.linspace(-3.0, 3.0, 17)
    half, new = np.empty((2, q.size)), np.empty((2, q.size))
    half_angles(q, half)
    advance_half_angles(q, q.copy(), half, new)
    np.testing.assert_array_equal(new, half)


def test_a_frame_of_small_steps_stays_within_a_few_ulps():
    rng = np.random.default_rng(1)
    q = rng.uniform(-3.0, 3.0, 42)
    half, new = np.empty((2, q.size)), np.empty((2, q.size))
    half_angles(q, half)
    for _ in range(50):  # far more steps than a frame takes (at most n_iterations)
        q_new = q + rng.normal(0.0, 0.01, q.size)
        advance_half_angles(q, q_new, half, new)
        q, half, new = q_new, new, half
    np.testing.assert_allclose(half, _exact(q), rtol=0, atol=2e-15)
