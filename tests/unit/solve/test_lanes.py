"""The lane kernel (issue 33): several sequences side by side, the scalar kernel's numbers.

:mod:`pipeline.solve.compiled.lane_frames` solves the sequences of a call in SIMD lanes.
Every lane runs the scalar kernel's expressions in its order, so each frame must come out
as the scalar kernel's (to 1e-12; in practice bit for bit) whichever lane solves it, on
every body shipped in ``../shared/data/`` and the mannequin, with missing keypoints and
limits active, for QuickIK's Gauss-Newton and the adaptive LM defaults (with the
uncertainty, a robust loss, the velocity warm start and coordinate tasks).

A long sequence is cut into pieces that warm up on the frames before them
(:func:`~pipeline.solve.compiled.lane_cuts.cut_sequences`); the fit then matches one
uninterrupted chain (``lanes=1``) to well within the solver's stopping tolerance.
"""

from __future__ import annotations

import warnings
from dataclasses import fields, replace

import numpy as np
import pytest

import pipeline.solve.compiled as compiled
from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.bodyplan.load_errors import UnobservableDofWarning
from pipeline.solve import SolverConfig, solve_frames, solve_sequence, solve_sequences
from pipeline.solve.compiled.lane_cuts import MIN_LANE_SEQUENCES, cut_sequences, sequence_starts
from pipeline.solve.compiled.lane_forward import LANES
from pipeline.synth import SynthConfig, synthesize

#: Largest difference allowed between the lanes and the scalar kernel (issue 33).
TOLERANCE = 1e-12

CONFIGS = {
    "quickik": SolverConfig.quickik(),
    "defaults": SolverConfig(),
    "huber-velocity": SolverConfig(loss="huber", warm_start="velocity", mode="lm"),
    "distance-velocity": SolverConfig(tolerance_on="distance", warm_start="velocity"),
}


def _limited(plan):
    """``plan`` with every unlimited hinge held within 0.6 rad of its neutral angle.

    The fly's and the G1's plans carry no limits; these make the clamp part of the test.
    """
    joints = []
    for j in plan.joints:
        dofs = tuple(
            replace(d, limits=(d.neutral - 0.6, d.neutral + 0.6))
            if d.type == "hinge" and d.limits is None
            else d
            for d in j.dofs
        )
        joints.append(replace(j, dofs=dofs))
    return replace(plan, joints=tuple(joints))


def _body(name: str, shared):
    if name == "mannequin":
        return mannequin(), 100.0
    if name == "fly":
        path, fps = shared / "quickik" / "neuromechfly_ypr_legs.json", 330.0
    else:
        path, fps = shared / "quickik-g1" / "g1_body_plan.json", 50.0
    with warnings.catch_warnings():  # the G1's ankle rolls have no keypoint below them
        warnings.simplefilter("ignore", UnobservableDofWarning)
        return _limited(load_body_plan(path)), fps


@pytest.fixture(scope="module")
def shared(quickik_dir):
    return quickik_dir.parent


def _sequences(plan, fps: float, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Ten sequences of 1-60 frames: noisy, with missing keypoints and a blank frame.

    The noise (a fifth of the body's size on a few keypoints) pulls some DOFs onto their
    limits, so the clamp is exercised.
    """
    rng = np.random.default_rng(seed)
    lengths = [1, 60, 7, 33, 2, 48, 19, 5, 41, 12]
    synth = synthesize(plan, SynthConfig(n_frames=sum(lengths), fps=fps, noise=0.01), rng)
    pos = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    size = float(np.nanmax(np.ptp(pos[0], axis=0)))
    pulled = rng.random(pos.shape[:2]) < 0.1
    pos[pulled] += rng.normal(0.0, 0.2 * size, (int(pulled.sum()), 3))
    pos[rng.random(pos.shape[:2]) < 0.15] = np.nan
    pos[5] = np.nan  # a frame with no keypoint at all
    weights = rng.uniform(0.3, 1.0, pos.shape[:2])
    edges = np.cumsum([0, *lengths])
    targets = [pos[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return targets, [weights[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _with_lanes(monkeypatch, on: bool):
    monkeypatch.setattr(compiled, "lanes_apply", lambda *a: on)


def _assert_same(a, b, label: str) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None:
            assert y is None, f"{label}: {f.name}"
            continue
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        assert x.shape == y.shape, f"{label}: {f.name}"
        same = (x == y) | (np.isnan(x) & np.isnan(y))
        gap = 0.0 if same.all() else float(np.max(np.abs(x - y)[~same]))
        assert gap <= TOLERANCE, f"{label}: {f.name} differs by {gap:.3g}"


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("body", ["fly", "g1", "mannequin"])
def test_lanes_equal_the_scalar_kernel(body, config, shared, monkeypatch):
    """Chained sequences (``solve_sequences``) and independent frames (``solve_frames``)."""
    plan, fps = _body(body, shared)
    cfg = CONFIGS[config]
    if config == "huber-velocity":  # a coordinate task on the first DOF too
        cfg = SolverConfig(
            loss="huber",
            warm_start="velocity",
            coordinate_tasks={plan.dof_names[0]: (0.1, 5.0)},
        )
    targets, weights = _sequences(plan, fps, seed=len(body) + len(config))
    runs = {}
    for on in (False, True):
        _with_lanes(monkeypatch, on)
        runs[on] = (
            solve_sequences(plan, targets, weights, config=cfg),
            solve_frames(plan, np.concatenate(targets), np.concatenate(weights), config=cfg),
        )
    scalar, lanes = runs[False], runs[True]
    for i, (a, b) in enumerate(zip(scalar[0], lanes[0], strict=True)):
        _assert_same(a, b, f"{body}/{config} sequence {i}")
    _assert_same(scalar[1], lanes[1], f"{body}/{config} frames")
    frames = scalar[1]
    assert frames.limit_active.any(), "no limit was active: the clamp went untested"
    assert (frames.observed < plan.n_joints).any() and (frames.observed == 0).any()


def test_lanes_are_used_where_they_apply(shared, monkeypatch):
    """The dispatch: enough sequences run in lanes, fewer (and coupled plans) do not."""
    plan, fps = _body("fly", shared)
    calls = []
    real = compiled.solve_lanes_kernel

    def spy(*args):
        calls.append(args[-1].shape[0] - 1)  # sequences
        return real(*args)

    monkeypatch.setattr(compiled, "solve_lanes_kernel", spy)
    targets, _ = _sequences(plan, fps, seed=1)
    frames = np.concatenate(targets)
    solve_frames(plan, frames[:MIN_LANE_SEQUENCES], config=SolverConfig.quickik())
    solve_frames(plan, frames[: MIN_LANE_SEQUENCES - 1], config=SolverConfig.quickik())
    solve_sequence(plan, frames[:20], config=SolverConfig.quickik())  # too short to cut
    assert calls == [MIN_LANE_SEQUENCES]


def test_cut_sequences_covers_every_frame_once_after_its_warm_up():
    starts = sequence_starts(np.array([True] + [False] * 999 + [True] + [False] * 99), True)
    observed = np.full(1100, 30)
    pieces = cut_sequences(starts, observed, lanes=512, warmup=4)
    kept = pieces.rows[pieces.keep]
    np.testing.assert_array_equal(kept, np.arange(1100))
    firsts = np.flatnonzero(pieces.cold)
    assert len(firsts) == LANES + min(LANES, 100 // 16)  # each sequence cut by its length
    for i, j in zip(firsts, [*firsts[1:], len(pieces.rows)], strict=True):
        rows, keep = pieces.rows[i:j], pieces.keep[i:j]
        np.testing.assert_array_equal(np.diff(rows), 1)  # contiguous
        if rows[0] not in (0, 1000):  # a piece inside a sequence warms up on 4 frames
            assert (~keep).sum() == 4 and not keep[:4].any()
        else:
            assert keep.all()


def test_cut_sequences_leaves_short_and_single_lane_sequences_whole():
    starts = sequence_starts(np.array([True] + [False] * 499), True)
    observed = np.full(500, 30)
    assert cut_sequences(starts, observed, lanes=1, warmup=4) is None
    assert cut_sequences(starts[:1].tolist() + [31], observed, lanes=512, warmup=4) is None
    assert len(np.flatnonzero(cut_sequences(starts, observed, 3, 4).cold)) == 3


def test_cut_sequences_never_starts_a_piece_in_or_just_after_a_gap():
    """A piece that starts cold where keypoints are missing could settle elsewhere."""
    t = 1600
    observed = np.full(t, 30)
    observed[600:700] = 0  # a gap of every keypoint
    observed[1000:1400:7] = 29  # scattered misses
    starts = sequence_starts(np.r_[True, np.zeros(t - 1, bool)], True)
    pieces = cut_sequences(starts, observed, lanes=512, warmup=4)
    for first in np.flatnonzero(pieces.cold):
        window = observed[max(0, pieces.rows[first]) : pieces.rows[first] + 5]
        assert pieces.rows[first] == 0 or (window == 30).all(), pieces.rows[first]
    np.testing.assert_array_equal(pieces.rows[pieces.keep], np.arange(t))


def test_a_cut_sequence_fits_as_one_chain(shared):
    """The fly's 600 frames in pieces against one uninterrupted chain (``lanes=1``)."""
    plan, fps = _body("fly", shared)
    synth = synthesize(
        plan, SynthConfig(n_frames=600, fps=fps, noise=0.01), np.random.default_rng(4)
    )
    targets = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    for cfg in (SolverConfig.quickik(), SolverConfig()):
        cut = solve_sequence(plan, targets, config=cfg)
        whole = solve_sequence(plan, targets, config=SolverConfig(**{**_kw(cfg), "lanes": 1}))
        gap = np.abs(cut.dof_value - whole.dof_value).max()
        rms = np.sqrt(np.nanmean(cut.rms_error**2)), np.sqrt(np.nanmean(whole.rms_error**2))
        print(f"{cfg.mode}: max DOF gap {gap:.2e} rad, RMS {rms[0]:.6f} / {rms[1]:.6f}")
        assert gap < 1e-6  # far inside the stopping tolerance (1e-3)
        assert abs(rms[0] - rms[1]) <= 1e-4 * rms[1]
        assert abs(cut.iterations.mean() - whole.iterations.mean()) < 0.1


def _kw(cfg: SolverConfig) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
