"""A fit's floats in its dtype: rows kept and cast in one copy (``cast_rows``).

The compiled engine computes in float64 and hands back ``SolverConfig.dtype``; a call cut
into lane pieces drops the pieces' warm-up rows and casts in the same copy. Both must give
what casting the float64 fit afterwards gives, values beyond float32's range clipped.
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from pipeline.bodyplan import mannequin
from pipeline.solve import SolverConfig, solve_sequence
from pipeline.solve.compiled.lane_cuts import cut_sequences
from pipeline.solve.result import cast_rows
from pipeline.synth import SynthConfig, synthesize


def test_cast_rows_keeps_the_rows_in_order_and_clips_to_the_dtype():
    a = np.arange(24.0).reshape(8, 3)
    a[1, 0], a[5, 1], a[6, 2], a[7, 0] = 1e300, -1e300, np.inf, np.nan
    keep = np.array([0, 1, 1, 0, 0, 1, 1, 1], bool)
    b = cast_rows(a, np.float32, keep)
    assert b.dtype == np.float32 and b.shape == (5, 3)
    big = np.finfo(np.float32).max
    with np.errstate(over="ignore"):
        expect = np.concatenate([a[1:3], a[5:8]]).astype(np.float32)
    expect[0, 0], expect[2, 1] = big, -big  # finite stays finite; inf and NaN stay
    np.testing.assert_array_equal(b, expect)
    np.testing.assert_array_equal(cast_rows(a, np.float64), a)
    assert cast_rows(a, np.float64) is not a
    assert not np.shares_memory(cast_rows(a, np.float64, keep), a)


def test_a_float32_fit_cut_in_pieces_is_the_float64_fit_cast():
    plan = mannequin()
    synth = synthesize(plan, SynthConfig(n_frames=300, noise=0.01), np.random.default_rng(3))
    pos = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    pos[np.random.default_rng(4).random(pos.shape[:2]) < 0.05] = np.nan
    base = SolverConfig.quickik()
    full = np.full(len(pos), plan.n_joints)
    assert cut_sequences(np.array([0, len(pos)]), full, base.lanes, base.warmup_frames)
    wide = solve_sequence(plan, pos, config=replace(base, dtype="float64"))
    narrow = solve_sequence(plan, pos, config=replace(base, dtype="float32"))
    for f in fields(wide):
        w, n = getattr(wide, f.name), getattr(narrow, f.name)
        if w is None:
            assert n is None, f.name
        elif w.dtype.kind == "f":
            assert n.dtype == np.float32, f.name
            np.testing.assert_array_equal(n, w.astype(np.float32), err_msg=f.name)
        else:
            np.testing.assert_array_equal(n, w, err_msg=f.name)
