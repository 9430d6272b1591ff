"""Synthetic sessions of known motion (for tests, benchmarks) and the demo archive."""

from pipeline.synth.sessions import (
    SynthConfig,
    SynthSession,
    body_size,
    dof_trajectories,
    synthesize,
)

__all__ = ["SynthConfig", "SynthSession", "body_size", "dof_trajectories", "synthesize"]
