"""Fault 6: the solver never stores NaN; frames it cannot fit are flagged, and counted.

Hostile frames (coordinates near float32's range, a far outlier, coincident keypoints,
huge weights) go through :func:`solve_sequence` in both precisions and both modes: every
pose and diagnostic comes back finite (``residual`` stay NaN only where a keypoint is
missing), and frames whose objective overflows are ``converged = False``. A fit of a
session with such frames stores no NaN and its report and attrs count the frames.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.fit import fit_session
from pipeline.solve import SolverConfig, solve_sequence
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit

POSE = ("dof_value", "root_position", "root_orientation", "joint_rotation", "fitted_position")
DIAGNOSTICS = ("rms_error", "max_error")


@pytest.fixture(scope="module")
def frames(fly_tracks):
    """(T, J, 3) clean targets of the fly (joint order = keypoint order)."""
    return fly_tracks["position"].values[:32, :, :, 0].transpose(0, 2, 1).astype(np.float64)


def _outlier(scale):
    def make(t):
        t = t.copy()
        t[::3, 5] = scale
        return t, None

    return make


HOSTILE = {
    "far-1e20": lambda t: (t * 1e20, None),
    "far-1e38": lambda t: (t * 1e38, None),
    "outlier-1e30": _outlier(1e30),
    "outlier-1e38": _outlier(3e38),
    "all-coincident": lambda t: (np.broadcast_to(t[:, :1], t.shape).copy(), None),
    "one-keypoint": lambda t: (np.where(np.arange(t.shape[1])[:, None] == 3, t, np.nan), None),
    "huge-weights": lambda t: (t, np.full(t.shape[:2], 1e300)),
    "tiny-weights": lambda t: (t, np.full(t.shape[:2], 1e-300)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["gn", "lm"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_solver_returns_finite_best_effort(fly, frames, dtype, mode, case):
    targets, weights = HOSTILE[case](frames)
    result = solve_sequence(fly, targets, weights, SolverConfig(dtype=dtype, mode=mode))
    for name in POSE + DIAGNOSTICS:
        bad = ~np.isfinite(getattr(result, name))
        assert not bad.any(), f"{name}: {int(bad.sum())} non-finite values"
    # keypoints beyond the working precision's range count as missing (residual NaN)
    observed = (np.abs(targets) <= np.finfo(dtype).max).all(axis=-1)
    if weights is not None:  # weights that underflow the precision mark keypoints missing
        observed &= np.minimum(weights, np.finfo(dtype).max).astype(dtype) > 0
    assert np.isfinite(result.residual[observed]).all()
    quat_norm = np.linalg.norm(result.root_orientation, axis=-1)
    np.testing.assert_allclose(quat_norm, 1.0, atol=1e-3)


#: float32 arithmetic: the numpy engine's (the compiled engine always computes in float64,
#: where a 1e30 outlier's squared residual does not overflow).
FLOAT32 = SolverConfig(dtype="float32", engine="numpy")


def test_overflowing_frames_are_not_converged(fly, frames):
    targets, _ = _outlier(1e30)(frames)
    result = solve_sequence(fly, targets, None, FLOAT32)
    assert not result.converged[::3].any()


def test_fit_store_has_no_nan_and_counts_unfitted_frames(fly, fly_tracks, tmp_path):
    tracks = fly_tracks.copy(deep=True)
    tracks["position"][10:14, :, 5, 0] = 1e30
    path = write_tracks(tracks, tmp_path / "t.zarr", chunk_frames=20)
    report = fit_session(path, fly, FLOAT32, tmp_path / "fit.zarr")
    fit = open_fit(tmp_path / "fit.zarr").load()
    for name in (
        "root_position",
        "root_orientation",
        "joint_rotation",
        "dof_value",
        "fitted_position",
        "rms_error",
        "max_error",
    ):
        assert np.isfinite(fit[name].values).all(), name
    converged = fit["converged"].values[:, 0]
    assert not converged[10:14].any()
    n_bad = int((~fit["converged"].values).sum())
    assert report.not_converged == n_bad == fit.attrs["not_converged"]
