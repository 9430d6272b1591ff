"""The per-coordinate process-noise estimate against white-jerk motion of known scale."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import ConfigError
from pipeline.solve import SolverConfig
from pipeline.solve.temporal.motion_model import _F3, _Q3, transition
from pipeline.solve.temporal.noise_fit import FACTORS, fit_noise


def white_jerk(sigma, fps, n, rng):
    """``n`` frames of the white-jerk model of scale ``sigma`` (values, rad)."""
    f, q = transition(np.array([sigma]), 1.0 / fps)
    chol = np.linalg.cholesky(q)
    x, out = np.zeros(3), np.empty(n)
    for t in range(n):
        x = f @ x + chol @ rng.normal(size=3)
        out[t] = x[0]
    return out


@pytest.mark.parametrize("true_factor", [0.5, 1.0, 2.0])
def test_the_estimate_finds_the_scale_the_motion_was_drawn_with(true_factor):
    """Three coordinates drawn at half, once and twice the configured scale (10).

    The estimate lands within one grid step (a factor sqrt(2)) of the truth on each of
    eight independent draws, and a column with a gap is estimated as well.
    """
    fps, n, noise, configured = 100.0, 1500, 3e-3, 10.0
    rng = np.random.default_rng(7)
    cols = [white_jerk(configured * true_factor, fps, n, rng) for _ in range(8)]
    z = np.stack(cols, axis=1) + rng.normal(size=(n, 8)) * noise
    r = np.full_like(z, noise**2)
    r[400:450, 0] = np.inf
    sigma = fit_noise(z, r, np.full(8, configured), 1.0 / fps, np.full(8, 1e-18), _F3, _Q3)
    ratio = sigma / (configured * true_factor)
    assert np.all((ratio > 0.7) & (ratio < 1.42)), ratio


def test_too_few_measurements_keep_the_configured_scale():
    z = np.zeros((20, 2))
    r = np.full((20, 2), np.inf)
    r[:3, 0] = 1e-4  # three measurements: nothing left to score
    sigma = fit_noise(z, r, np.array([10.0, 4.0]), 0.01, np.full(2, 1e-18), _F3, _Q3)
    assert np.array_equal(sigma, [10.0, 4.0])
    assert FACTORS.min() < 1.0 < FACTORS.max()


def test_the_switch_must_be_a_boolean():
    with pytest.raises(ConfigError, match="SolverConfig.temporal_noise_fit"):
        SolverConfig(temporal="smooth", temporal_noise_fit="yes")
