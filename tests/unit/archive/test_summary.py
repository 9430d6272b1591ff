"""The archive summary: solver speed apart from wall time, stop reasons with their meaning."""

from __future__ import annotations

import pytest

from pipeline.archive.summary import ArchiveSummary, SessionOutcome
from pipeline.solve.rules import STOP_MEANINGS, STOP_REASONS


def _summary() -> ArchiveSummary:
    reasons = {"converged": 990, "max_iterations": 10, "stalled": 0, "no_observations": 0}
    return ArchiveSummary(
        (
            SessionOutcome("a", "fitted", 1000, 2, solve_seconds=0.1, stop_reasons=reasons),
            SessionOutcome("b", "fitted", 500, 1, solve_seconds=0.05),
            SessionOutcome("c", "skipped", 700, 1, solve_seconds=None),
        ),
        fit_seconds=10.0,
    )


def test_solver_speed_counts_frame_individuals_per_second_of_solving():
    summary = _summary()
    assert summary.frames_per_s == pytest.approx(1500 / 10.0)  # wall: start-up included
    assert summary.solver_frames_per_s == pytest.approx((2000 + 500) / 0.15)
    assert ArchiveSummary(()).solver_frames_per_s is None


def test_every_stop_reason_has_a_meaning_and_the_markdown_says_it():
    assert set(STOP_MEANINGS) == set(STOP_REASONS)
    text = _summary().to_markdown()
    assert "solver frames/s per core" in text and "16,667" in text
    assert f"- max_iterations: 10 ({STOP_MEANINGS['max_iterations']})" in text
    assert "- stalled" not in text  # reasons that did not occur are not listed
