"""Smoothed velocities from the first frame: the start, gaps and chunk seams.

The smoother's posterior is checked against the exact posterior of the same model with a
flat prior on the first state, solved here as one whitened least-squares problem (numpy's
``lstsq``), and whole sessions against the synthetic truth (:mod:`pipeline.synth`).
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig, solve_sequence
from pipeline.solve.temporal.marginal import smooth_coordinates
from pipeline.solve.temporal.motion_model import _F3, _Q3
from pipeline.solve.temporal.stretch import gap_frames
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize

#: The issue's sessions: 1,500 frames, the fly at 330 fps, the mannequin at 100 fps.
BODIES = {"fly": 330.0, "mannequin": 100.0}
#: Smoothing with each coordinate's process noise estimated from its fits.
FITTED = SolverConfig(temporal="smooth", temporal_noise_fit=True)


def exact_posterior(z, r, q, tau):
    """Mean and variance of value and velocity (T, 2) under a flat prior on frame 0.

    The white-jerk model's negative log posterior is a sum of squares: measurements
    ``(z_t - x_t[0]) / sqrt(r_t)`` and steps ``L^-1 (x_t - F x_(t-1))`` (``q Q3 = L L^T``);
    its minimiser is the posterior mean and ``(A^T A)^-1`` its covariance. States are
    scaled by ``tau`` frames per unit of velocity so the problem is well conditioned.
    """
    t_n = len(z)
    whiten = np.linalg.inv(np.linalg.cholesky(q * _Q3))
    d = np.diag([1.0, 1.0 / tau, 1.0 / tau**2])
    rows, rhs = [], []
    for t in np.flatnonzero(np.isfinite(r)):
        row = np.zeros(3 * t_n)
        row[3 * t] = 1.0 / np.sqrt(r[t])
        rows.append(row)
        rhs.append(z[t] / np.sqrt(r[t]))
    for t in range(1, t_n):
        block = np.zeros((3, 3 * t_n))
        block[:, 3 * t : 3 * t + 3] = whiten @ d
        block[:, 3 * t - 3 : 3 * t] = -whiten @ _F3 @ d
        rows.extend(block)
        rhs.extend([0.0] * 3)
    a = np.array(rows)
    s = np.linalg.lstsq(a, np.array(rhs), rcond=None)[0].reshape(t_n, 3) @ d
    r_inv = np.linalg.inv(np.linalg.qr(a)[1])
    var = np.sum(r_inv**2, axis=1).reshape(t_n, 3) * np.diag(d) ** 2
    return s[:, :2], var[:, :2]


def signal(fps, noise, n=200, seed=1):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / fps
    truth = 0.3 * np.sin(2 * np.pi * 0.7 * t + 1.0) + 0.1 * np.sin(2 * np.pi * 0.2 * t)
    r = (noise * rng.uniform(0.7, 1.3, n)) ** 2
    return truth + rng.normal(size=n) * np.sqrt(r), r


def smooth_one(z, r, fps, sigma=10.0):
    one = np.ones(1)
    return smooth_coordinates(
        z[:, None], None, r[:, None], sigma * one, 1.0 / fps, np.zeros(1, bool), one
    )


@pytest.mark.parametrize("fps, noise", [(330.0, 6e-3), (100.0, 6e-3), (100.0, 6e-4)])
@pytest.mark.parametrize("lead", [0, 15])
def test_the_smoother_is_the_exact_posterior_from_the_first_frame(fps, noise, lead):
    """Means within 2 % of an SD of the exact answer at every frame, frame 0 included.

    Measured: at most 0.34 % (the start counts its three frames 1 % twice); the SD within
    0.5 %. A leading gap (unmeasured first frames) is extrapolated back exactly.
    """
    z, r = signal(fps, noise)
    r[:lead] = np.inf
    sm = smooth_one(z, r, fps)
    tau = (noise**2 / 100.0) ** (1 / 6) * fps
    mean, var = exact_posterior(z, r, 100.0 / fps**5, tau)
    sd = np.sqrt(var)
    assert np.max(np.abs(sm.value[:, 0] - mean[:, 0]) / sd[:, 0]) < 0.02
    assert np.max(np.abs(sm.velocity[:, 0] - mean[:, 1]) / sd[:, 1]) < 0.02
    ratio = sm.std[:, 0] / sd[:, 0]
    assert ratio.min() >= 0.99 and ratio.max() <= 1.0 + 1e-6


def test_a_long_gap_starts_the_next_stretch_from_its_own_data():
    """After a gap the motion model cannot bridge, the smoother starts over, exactly.

    Frames after the gap are the exact posterior of the data after it alone; the gap's
    frames are extrapolated from either side with a variance that peaks inside it.
    """
    fps = 100.0
    z, r = signal(fps, 6e-3, n=400)
    gap = int(np.ceil(gap_frames(np.array([100.0 / fps**5]), np.ones(1))[0]))
    a, b = 100, 100 + gap + 20
    r[a:b] = np.inf
    sm = smooth_one(z, r, fps)
    tau = (6e-3**2 / 100.0) ** (1 / 6) * fps
    mean, var = exact_posterior(z[b:], r[b:], 100.0 / fps**5, tau)
    sd = np.sqrt(var)
    assert np.max(np.abs(sm.value[b:, 0] - mean[:, 0]) / sd[:, 0]) < 0.02
    assert np.max(np.abs(sm.velocity[b:, 0] - mean[:, 1]) / sd[:, 1]) < 0.02
    inside = sm.std[a:b, 0]
    assert np.isfinite(inside).all() and inside.max() > 10 * sm.std[: a - 5, 0].max()
    assert np.argmax(inside) not in (0, b - a - 1)  # grows from both ends


def fit_body(body, noise, quickik_dir, seed=3):
    plan = (
        mannequin()
        if body == "mannequin"
        else load_body_plan(quickik_dir / "neuromechfly_ypr_legs.json")
    )
    fps = BODIES[body]
    synth = synthesize(
        plan, SynthConfig(n_frames=1500, fps=fps, noise=noise), np.random.default_rng(seed)
    )
    targets = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    result = solve_sequence(plan, targets, config=FITTED, fps=fps)
    return synth, result


def velocity_errors(velocity, truth, fps):
    """Per-frame RMS velocity error (T,), the session's RMS error and RMS true velocity."""
    true_v = np.gradient(truth, 1.0 / fps, axis=0, edge_order=2)
    err = velocity - true_v
    return np.sqrt(np.mean(err**2, axis=1)), np.sqrt(np.mean(err**2)), np.sqrt(np.mean(true_v**2))


def coverage(result, truth):
    seen = result.dof_observable
    return float(np.mean(np.abs(result.dof_value - truth)[seen] < 1.96 * result.dof_std[seen]))


@pytest.mark.parametrize("body", list(BODIES))
def test_one_percent_noise_velocities_have_no_start_up_transient(body, quickik_dir):
    """1 % noise, 1,500 frames: no frame's velocity error over 5x the session's RMS error.

    Frame 0's velocity was 1,230 rad/s off on such a fly session (the truth peaks at 1.4)
    when the filter started diffuse. Measured (seed 3, process noise estimated per
    coordinate): worst frame 4.4x (fly) and 4.6x (mannequin), the edges' one-sided
    estimates; RMS error 18.8 % and 27.4 % of the true velocity RMS (20.7 % and 31.1 %
    with the configured scales); coverage of 1.96 SD 0.92 and 0.94.
    """
    synth, result = fit_body(body, 0.01, quickik_dir)
    truth = synth.truth.dof_value.values[:, 0]
    per_frame, rms, size = velocity_errors(result.dof_velocity, truth, BODIES[body])
    print(f"{body}: worst frame {per_frame.max() / rms:.2f}x RMS, RMS {rms / size:.3f}")
    assert per_frame.max() <= 5 * rms
    assert (
        np.abs(result.dof_velocity).max()
        < 3 * np.abs(np.gradient(truth, axis=0)).max() * BODIES[body]
    )
    assert 0.90 <= coverage(result, truth) <= 0.98
    assert rms <= 0.30 * size


@pytest.mark.parametrize("body", list(BODIES))
def test_a_tenth_of_a_percent_noise_gives_velocities_within_ten_percent(body, quickik_dir):
    """Measured (seed 3): 4.3 % (fly) and 6.7 % (mannequin); 5.7 % and 9.2 % unfitted.

    The worst frame is the mannequin's first, 8.0x its RMS (the fly's 4.8x): the one-sided
    edge gains less from the better tracks than the middle does; not bounded here.
    """
    synth, result = fit_body(body, 0.001, quickik_dir)
    truth = synth.truth.dof_value.values[:, 0]
    per_frame, rms, size = velocity_errors(result.dof_velocity, truth, BODIES[body])
    print(f"{body}: worst frame {per_frame.max() / rms:.2f}x RMS, RMS {rms / size:.3f}")
    assert rms <= 0.10 * size
    assert 0.90 <= coverage(result, truth) <= 0.98


@pytest.mark.parametrize("noise_fit", [False, True])
def test_chunk_seams_do_not_show_in_velocities(tmp_path, noise_fit):
    """A session fitted in chunks (one task after another) has the whole session's velocities.

    Every chunk's smoother starts cold at the first frame it reads (the overlap before
    it), so a transient there would show at the seams; the overlap on both sides hides it.
    With the configured process-noise scales the chunked session equals the whole one;
    with scales estimated per sequence each chunk takes its own (measured: up to 0.20
    rad/s apart, on a true velocity RMS of 0.45), and only the seams and the session's
    RMS error are held to the whole one's.
    """
    plan, fps = mannequin(), 100.0
    synth = synthesize(
        plan, SynthConfig(n_frames=1500, fps=fps, noise=0.01), np.random.default_rng(3)
    )
    tracks = write_tracks(synth.tracks, tmp_path / "t.zarr", chunk_frames=300)
    config = SolverConfig(temporal="smooth", temporal_noise_fit=noise_fit)
    fit_session(tracks, plan, config, tmp_path / "f.zarr", chunk_frames=300)
    chunked = open_fit(tmp_path / "f.zarr")["dof_velocity"].values[:, 0].astype(np.float64)
    one = synth.tracks.isel(individual=0)
    targets = one.position.values.transpose(0, 2, 1).astype(np.float64)
    weights = one.confidence.values.astype(np.float64)
    whole = solve_sequence(plan, targets, weights, config=config, fps=fps).dof_velocity
    truth = synth.truth.dof_value.values[:, 0]
    per_frame, rms, size = velocity_errors(chunked, truth, fps)
    seams = np.arange(300, 1500, 300)
    around = np.concatenate([np.arange(s - 3, s + 3) for s in seams])
    gap = np.abs(chunked - whole).max()
    print(
        f"chunked vs whole: {gap:.2e} rad/s; worst seam frame {per_frame[around].max() / rms:.2f}x"
    )
    assert per_frame.max() <= 5 * rms and per_frame[around].max() <= 2 * rms
    if not noise_fit:
        assert gap < 0.01 * size
    else:
        _, whole_rms, _ = velocity_errors(whole, truth, fps)
        assert abs(rms - whole_rms) <= 0.05 * whole_rms


@pytest.mark.parametrize(
    "body, gaps, bound",
    [("mannequin", [(0, 100), (600, 700)], 0.30), ("fly", [(600, 700)], 0.30)],
)
def test_velocities_after_a_gap_in_every_keypoint_start_right(body, gaps, bound, quickik_dir):
    """No keypoint for 100 frames: the frames after it start from their own data.

    The frames inside the gap carry no residual to size the noise by, so they take the
    session's noise level (a noise floor there made the held poses exact measurements and
    the fly's RMS velocity error 42 %). Measured (seed 3, frames outside the gaps): RMS
    27.7 % (mannequin) and 19.6 % (fly) of the true velocity RMS; the frames after a gap
    at most 2.4x the RMS error, the worst frame 2.7x and 4.2x. (The fly is not given a
    gap at the start: its per-frame fits then settle in a wrong pose for the session.)
    """
    plan = (
        mannequin()
        if body == "mannequin"
        else load_body_plan(quickik_dir / "neuromechfly_ypr_legs.json")
    )
    fps = BODIES[body]
    synth = synthesize(
        plan, SynthConfig(n_frames=1500, fps=fps, noise=0.01), np.random.default_rng(3)
    )
    targets = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    outside = np.ones(len(targets), bool)
    for a, b in gaps:
        targets[a:b] = np.nan
        outside[a:b] = False
    result = solve_sequence(plan, targets, config=FITTED, fps=fps)
    truth = synth.truth.dof_value.values[:, 0]
    per_frame, _, _ = velocity_errors(result.dof_velocity, truth, fps)
    true_v = np.gradient(truth, 1.0 / fps, axis=0, edge_order=2)[outside]
    rms, size = np.sqrt(np.mean(per_frame[outside] ** 2)), np.sqrt(np.mean(true_v**2))
    after = np.concatenate([np.arange(b, b + 5) for _, b in gaps])
    worst, first = per_frame[outside].max() / rms, per_frame[after].max() / rms
    print(f"{body}: RMS {rms / size:.3f}, after gaps {first:.2f}x, worst {worst:.2f}x")
    assert rms <= bound * size
    assert per_frame[outside].max() <= 5 * rms
    assert per_frame[after].max() <= 3 * rms
