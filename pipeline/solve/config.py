"""Typed solver configuration."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.solve.rules import LOSS_NAMES, LossName

__all__ = ["SolverConfig"]


@dataclass(frozen=True)
class SolverConfig:
    """Settings of the batched Gauss-Newton / Levenberg-Marquardt solver.

    Lengths are in the body plan's units (millimetres for the fly, metres for the
    mannequin), angles in radians. The defaults are QuickIK's, tuned for millimetre-scale
    bodies: the prior weighs squared lengths, so for a plan in metres scale
    ``neutral_weight`` by about 1e-6 and ``position_tolerance`` by about 1e-3 (the
    mannequin's demo config uses ``neutral_weight=1e-6``, ``position_tolerance=1e-5``).

    Attributes
    ----------
    n_iterations : int
        Most steps per frame (default 10). Warm-started sequences usually stop after 1-3.
    neutral_weight : float
        Weight of the prior ``sum_k scaler_k * (q_k - neutral_k)^2`` (default 1e-3, in
        length^2 per rad^2). 0 recovers exactly reachable poses exactly; larger values
        keep unobserved or ill-conditioned DOFs near neutral at the price of a bias.
    position_tolerance : float
        A frame stops when its largest position update (root translation, slides) is
        below this (default 1e-3 length units) ...
    angle_tolerance : float
        ... and its largest angle update is below this (default 1e-3 rad).
    damping : float
        Relative damping ``damping * max(A_ii, 1)`` added to the normal matrix diagonal
        (default 1e-6). Keeps singular systems solvable; larger values slow convergence.
    dtype : {"float64", "float32"}
        Precision of the results and of the numpy engine's arithmetic (there float32 is
        about twice as fast and accurate to ~1e-6 of the body size; float64 reaches the
        optimum to round-off). The compiled engine always computes in float64.
    mode : {"gn", "lm"}
        ``gn``: QuickIK's Gauss-Newton, every step taken. ``lm``: adaptive
        Levenberg-Marquardt, a step is taken only if the objective drops and the damping
        adapts (x0.3 on success, x10 on failure); converges to the least-squares optimum
        where plain Gauss-Newton oscillates, at the price of extra evaluations.
    lm_initial_damping : float
        Starting relative damping of ``lm`` mode (default 1e-3).
    cost_tolerance : float
        ``lm`` mode also stops when an accepted step lowers the objective by at most
        this fraction of it (default 0: only a flat objective stops it this way).
    loss : {"l2", "huber", "cauchy"}
        Robust loss on each keypoint's residual distance, by iterative reweighting.
        ``huber`` is quadratic below ``loss_scale`` and linear above; ``cauchy`` grows
        logarithmically, so far outliers barely pull.
    loss_scale : float
        Residual distance (length units, or pixels for 2D observations) where the robust
        loss departs from quadratic (default 1.0).
    min_confidence : float
        Keypoints with a confidence below this are treated as missing (default 0).
    lanes : int
        Most segments solved in lockstep by :func:`solve_sequence` (default 512). More
        lanes make numpy calls wider; each lane warms up on ``warmup_frames`` extra
        frames, and a segment is at least four warm-up lengths long.
    warmup_frames : int
        Frames solved before a lane's first frame to warm it up (default 4; on the fly's
        real sequence 3 already reach the same RMS as a single uninterrupted lane).
    warm_start : {"previous", "velocity"}
        How :func:`solve_sequence` starts a frame: from the previous frame's solution
        (QuickIK), or from a constant-velocity prediction of the two previous solutions.
        The prediction helps smooth, well-conditioned motion; on noisy tracks with
        ill-conditioned DOFs it extrapolates noise, so ``previous`` is the default.
    cold_root : {"kabsch", "origin"}
        Cold-start root pose of a free base: a rigid (Kabsch) fit of the neutral pose to
        the observed keypoints, or the origin with identity rotation (QuickIK).
    engine : {"auto", "compiled", "numpy"}
        ``compiled``: numba kernels solving one frame at a time (3D observations only;
        about 5x the numpy engine on the fly; sequences run frame after frame, so
        ``lanes`` and ``warmup_frames`` do not apply). ``numpy``: frames in lockstep lanes
        of numpy calls (every mapper). ``auto`` (default): compiled for 3D observations,
        numpy for 2D ones. The compiled engine computes in float64 and returns ``dtype``.
    """

    n_iterations: int = 10
    neutral_weight: float = 1e-3
    position_tolerance: float = 1e-3
    angle_tolerance: float = 1e-3
    damping: float = 1e-6
    dtype: Literal["float64", "float32"] = "float64"
    mode: Literal["gn", "lm"] = "gn"
    lm_initial_damping: float = 1e-3
    cost_tolerance: float = 0.0
    loss: LossName = "l2"
    loss_scale: float = 1.0
    min_confidence: float = 0.0
    lanes: int = 512
    warmup_frames: int = 4
    warm_start: Literal["previous", "velocity"] = "previous"
    cold_root: Literal["kabsch", "origin"] = "kabsch"
    engine: Literal["auto", "compiled", "numpy"] = "auto"

    def __post_init__(self) -> None:
        dtype = np.dtype(self.dtype).name if not isinstance(self.dtype, str) else self.dtype
        object.__setattr__(self, "dtype", dtype)
        choices = {
            "dtype": ("float64", "float32"),
            "mode": ("gn", "lm"),
            "loss": LOSS_NAMES,
            "cold_root": ("kabsch", "origin"),
            "warm_start": ("previous", "velocity"),
            "engine": ("auto", "compiled", "numpy"),
        }
        for name, valid in choices.items():
            if getattr(self, name) not in valid:
                raise ValueError(
                    f"SolverConfig.{name}: {getattr(self, name)!r} is not one of {', '.join(valid)}"
                )
        for name in ("n_iterations", "lanes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SolverConfig.{name}: must be a positive integer, not {value!r}")
        if (
            isinstance(self.warmup_frames, bool)
            or not isinstance(self.warmup_frames, int)
            or (self.warmup_frames < 0)
        ):
            raise ValueError(
                f"SolverConfig.warmup_frames: must be >= 0, not {self.warmup_frames!r}"
            )
        for name in (
            "neutral_weight",
            "position_tolerance",
            "angle_tolerance",
            "damping",
            "lm_initial_damping",
            "cost_tolerance",
            "min_confidence",
        ):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value >= 0)
            ):
                raise ValueError(
                    f"SolverConfig.{name}: must be a finite number >= 0, not {value!r}"
                )
        if not (isinstance(self.loss_scale, int | float) and self.loss_scale > 0):
            raise ValueError(f"SolverConfig.loss_scale: must be > 0, not {self.loss_scale!r}")

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of :attr:`dtype`."""
        return np.dtype(self.dtype)

    def effective(self, plan: BodyPlan) -> tuple[float, float]:
        """The prior weight and position tolerance applied to ``plan``.

        Parameters
        ----------
        plan : BodyPlan

        Returns
        -------
        neutral_weight : float
            In (observation unit)^2 per rad^2.
        position_tolerance : float
            In the plan's length unit.
        """
        return float(self.neutral_weight), float(self.position_tolerance)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (for provenance attrs and fingerprints)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SolverConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error listing the valid ones."""
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(
                f"unknown solver setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}"
            )
        return cls(**data)
