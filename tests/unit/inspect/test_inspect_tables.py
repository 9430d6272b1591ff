"""Tables against hand-computed answers: session summary, individuals, worst frames, provenance."""

import numpy as np
import pytest

from pipeline.inspect import (
    InspectError,
    individual_summary,
    provenance,
    session_summary,
    summary_table,
    worst_frames,
)
from pipeline.solve import SolverConfig
from tests.fixtures.inspect_samples import handmade_fit

NAN = np.nan
#: rows are frames (0.0, 0.1, ... s), columns individuals i0, i1
RMS = np.array([[1.0, 2.0], [3.0, NAN], [5.0, 0.5], [NAN, NAN], [4.0, 6.0], [0.2, 0.1]])


def test_session_summary_known_answer():
    row = session_summary(handmade_fit(RMS))
    finite = RMS[np.isfinite(RMS)]
    assert row["frames"] == 6 and row["individuals"] == 2
    assert row["median_rms"] == pytest.approx(np.median(finite))  # 1.5
    assert row["worst_rms"] == 6.0
    assert row["worst_time"] == pytest.approx(0.4) and row["worst_individual"] == "i1"
    assert row["non_converged_fraction"] == pytest.approx(2 / 12)  # frame 3, both
    assert row["limit_active_fraction"] == pytest.approx(3 / 24)  # frames 0, 2, 4 of i0, d1
    assert row["max_seam_disagreement"] == 0.25
    assert row["unit"] == "mm"


def test_summary_of_a_session_never_observed_is_nan_not_an_error():
    row = session_summary(handmade_fit(np.full((4, 1), NAN)))
    assert np.isnan(row["median_rms"]) and np.isnan(row["worst_rms"])
    assert row["worst_individual"] is None
    assert worst_frames(handmade_fit(np.full((4, 1), NAN))).empty


def test_summary_table_rows_in_mapping_order():
    table = summary_table({"z": handmade_fit(RMS), "a": handmade_fit(RMS[:, :1])})
    assert list(table.index) == ["z", "a"]
    assert table.loc["a", "worst_rms"] == 5.0 and table.loc["a", "individuals"] == 1


def test_worst_frames_known_answer():
    frames = worst_frames(handmade_fit(RMS), n=4)
    assert list(frames["rms_error"]) == [6.0, 5.0, 4.0, 3.0]
    assert list(frames["individual"]) == ["i1", "i0", "i0", "i0"]
    assert list(frames["frame"]) == [4, 2, 4, 1]
    np.testing.assert_allclose(frames["time"], [0.4, 0.2, 0.4, 0.1])
    assert list(frames["max_error"]) == [12.0, 10.0, 8.0, 6.0]
    assert set(frames["worst_keypoint"]) == {"b"}
    assert list(frames["dofs_at_limit"]) == [0, 1, 1, 0]
    assert frames["converged"].all()
    # more rows asked than observed frame-individuals: only the observed ones
    assert len(worst_frames(handmade_fit(RMS), n=100)) == np.isfinite(RMS).sum()


def test_individual_summary_known_answer():
    table = individual_summary(handmade_fit(RMS))
    assert list(table.index) == ["i0", "i1"]
    assert table.loc["i0", "median_rms"] == pytest.approx(3.0)
    assert table.loc["i1", "worst_rms"] == 6.0
    assert table.loc["i1", "worst_time"] == pytest.approx(0.4)
    assert table.loc["i0", "limit_active_fraction"] == pytest.approx(3 / 12)
    assert table.loc["i1", "limit_active_fraction"] == 0
    assert table.loc["i1", "observed_fraction"] == pytest.approx(4 / 6)
    assert table.loc["i0", "mean_iterations"] == pytest.approx(np.mean(np.arange(6) % 7 + 1))


def test_provenance_of_a_real_fit(walk):
    entries = provenance(walk)
    assert entries["body plan sha256"] == walk.attrs["body_plan_sha256"]
    assert entries["input fingerprint (sha256)"] == walk.attrs["input_sha256"]
    assert entries["fit fingerprint"] == walk.attrs["fingerprint"]
    assert entries["kinefit version"] == walk.attrs["kinefit_version"]
    assert entries["body plan"] == "mannequin: 29 joints, 32 DOFs"
    assert SolverConfig.from_dict(entries["solver config"]) == SolverConfig(lanes=8)
    assert entries["chunking"] == "2 chunks of 100 frames, 16 overlap frames"
    assert provenance(handmade_fit(RMS)) == {
        "session": "handmade",
        "frames per second (tracks)": 10.0,
        "length unit": "mm",
    }


@pytest.mark.parametrize(
    ("func", "drop", "named"),
    [
        (session_summary, "converged", "'converged'"),
        (individual_summary, "iterations", "'iterations'"),
        (worst_frames, "residual", "'residual'"),
    ],
)
def test_tables_reject_a_dataset_missing_what_they_need(func, drop, named):
    with pytest.raises(InspectError, match=f"{func.__name__} needs .*missing variable.*{named}"):
        func(handmade_fit(RMS).drop_vars(drop))


def test_frames_with_nothing_observed_are_not_an_rms_of_zero():
    """A no_observations frame stores RMS 0 (of nothing): the medians leave it out."""
    rms = np.array([[1.0, 2.0], [0.0, 0.0], [0.0, 4.0], [3.0, 0.0], [5.0, 6.0]])
    fit = handmade_fit(rms)
    codes = np.zeros(rms.shape, np.int8)
    codes[1, :], codes[3, 1] = 3, 3  # frame 1 empty for both; frame 3 for i1
    fit["stop_reason"] = (("time", "individual"), codes)
    seen = [1.0, 2.0, 0.0, 4.0, 3.0, 5.0, 6.0]  # frame 2 of i0 is a real zero
    assert session_summary(fit)["median_rms"] == pytest.approx(np.median(seen))
    per = individual_summary(fit)
    assert per.loc["i0", "median_rms"] == pytest.approx(np.median([1.0, 0.0, 3.0, 5.0]))
    assert per.loc["i1", "median_rms"] == pytest.approx(np.median([2.0, 4.0, 6.0]))
    # without stop reasons (an older store) every stored value counts
    del fit["stop_reason"]
    assert session_summary(fit)["median_rms"] == pytest.approx(np.median(rms))
