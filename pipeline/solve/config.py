"""Typed solver configuration."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ConfigError
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.solve.rules import LOSS_NAMES, LossName
from pipeline.solve.temporal.motion_model import check_noise

__all__ = ["SolverConfig", "neutral_extent"]


@dataclass(frozen=True)
class SolverConfig:
    """Settings of the batched Levenberg-Marquardt / Gauss-Newton solver.

    The defaults converge on every body we test without tuning (an adaptive LM with the
    iteration cap as a safety net) and mean the same thing in any unit: the prior weight
    and the position tolerance are measured in the body's size. With ``length_scale``
    ``s`` (default: the plan's neutral extent, :func:`neutral_extent`, the largest
    distance between two keypoints of its neutral pose) the solver applies

    - prior weight ``neutral_weight * s**2`` (observation units squared per rad squared),
    - position tolerance ``position_tolerance * s`` (length units),
    - relative damping ``lam * max(A_ii, s**2)`` on angle coordinates (``max(A_ii, 1)``
      on positions), so that the same motion gives the same angles in mm and in m.

    With the defaults (``neutral_weight=3e-6``, ``position_tolerance=1e-4``) that is, for
    the fly (s = 3.56 mm) a prior of 3.8e-5 mm^2/rad^2 and a tolerance of 3.6e-4 mm; for
    the Unitree G1 (s = 1.08 m) 3.5e-6 m^2/rad^2 and 1.1e-4 m; for the mannequin
    (s = 1.74 m) 9.1e-6 m^2/rad^2 and 1.7e-4 m. Measured with the defaults: fly real
    sequence mean keypoint RMS 0.0759 mm (7.4 iterations/frame, all converged); G1
    300-frame sequence all converged (13.8 iterations/frame, RMS 0.1000 m), G1 23 real
    frames 0.9988x the objective of a scipy least-squares reference (22 converged, one
    at the cap); mannequin motion recovered to 0.036 deg mean (5.1 iterations/frame);
    the mannequin in mm gives its angles in m to 5e-15 rad; OpenSim's Rajagopal2016 (37
    DOFs, 8 locked, coupled knees) running at 100 Hz with 5 mm marker noise 5
    iterations/frame median (at most 6 over 600 frames), all converged. ``length_scale=1.0`` makes
    the values absolute (plan units). :meth:`quickik` gives QuickIK's exact semantics.

    Attributes
    ----------
    n_iterations : int
        Most steps per frame (default 100, a safety net: frames stop at a stationary
        point first; ``stop_reason`` says which stopped how).
    neutral_weight : float
        Weight of the prior ``sum_k scaler_k * (q_k - neutral_k)^2``, per squared
        ``length_scale`` (default 3e-6). 0 recovers exactly reachable poses exactly;
        larger values keep unobserved or ill-conditioned DOFs near neutral at the price
        of a bias.
    position_tolerance : float
        A frame stops when its largest position update (root translation, slides) is
        below this times ``length_scale`` (default 1e-4) ...
    angle_tolerance : float
        ... and its largest angle update is below this (default 1e-4 rad).
    tolerance_on : {"step", "distance"}
        What the two tolerances bound. ``step`` (default): the update just applied.
        ``distance``: the distance still left to the optimum, estimated from that update
        and the rate at which the frame's accepted updates shrink (``r``, the larger of
        the position and angle ratios to the update before): ``update * r / (1 - r)``,
        trusted for ``r`` under :data:`~pipeline.solve.rules.RATE_TRUSTED` only (the
        ``step`` rule otherwise), so it never takes more iterations than ``step``.
        Gauss-Newton converges linearly on residuals of centimetres (about tenfold per
        step on OpenSim's Gait2392 walk), where an update under the tolerance leaves a
        tenth of it to go: ``distance`` stops one step sooner at the same accuracy.
        OpenSim setups' ``accuracy`` is read this way (:mod:`pipeline.opensim_setup`).
    damping : float
        Relative damping of ``gn`` mode, and the floor of ``lm`` mode's (default 1e-6).
    dtype : {"float64", "float32"}
        Precision of the results and of the numpy engine's arithmetic (there float32 is
        about twice as fast and accurate to ~1e-6 of the body size; float64 reaches the
        optimum to round-off). The compiled engine always computes in float64.
    mode : {"lm", "gn"}
        ``lm`` (default): adaptive Levenberg-Marquardt, a step is taken only if the
        objective does not rise and the damping adapts (x0.3 on success, x10 on failure;
        :mod:`pipeline.solve.rules`); converges where plain Gauss-Newton oscillates (on
        the G1, QuickIK's GN stops every frame at its cap at 1.4-1.6x the objective).
        ``gn``: QuickIK's Gauss-Newton, every step taken.
    lm_initial_damping : float
        Starting relative damping of ``lm`` mode (default 1e-3).
    cost_tolerance : float
        ``lm`` mode also stops (converged) when an accepted step lowers the objective by
        at most this fraction of it (default 1e-6; 0: only a flat objective).
    length_scale : float or None
        The length ``neutral_weight`` and ``position_tolerance`` are measured in, and the
        angle damping floor's root (default None: the plan's neutral extent; 1.0:
        absolute, in the plan's units).
    restarts : int
        :func:`~pipeline.solve.solve_frames` solves each frame again from this many other
        starts and keeps the lowest objective (default 0; 1: from the previous frame's
        best; 2: also the neutral DOFs under the frame's own best root). On the G1's 23
        real frames 2 restarts lower the mean objective by 0.1 % (0.29897 to 0.29866) at
        3x the time, so the default leaves them off. :func:`~pipeline.solve.solve_sequence`
        ignores it.
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
        Most segments a sequence is cut into by :func:`~pipeline.solve.solve_sequence`
        (default 512), solved side by side: in lockstep numpy calls (numpy engine; more
        lanes make them wider), or in the compiled engine's SIMD lanes (at most
        :data:`~pipeline.solve.compiled.lane_forward.LANES` per sequence, at fully observed
        frames only). Each segment after the first warms up on ``warmup_frames`` extra
        frames, and a segment is at least four warm-up lengths long. ``lanes=1`` keeps
        every sequence one uninterrupted chain.
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
        ``compiled``: numba kernels solving frame after frame (3D observations, the
        image plane and calibrated cameras; about 5x the numpy engine on the fly). For 3D
        observations of a plan without driven axes, independent frames and sequences
        (and a long sequence's segments, ``lanes``) run side by side in SIMD lanes, each
        lane with the one-frame kernel's numbers. ``numpy``: frames in lockstep lanes of
        numpy calls (every mapper, a user's own too). ``auto`` (default): compiled for
        those three, numpy for any other mapper. The compiled engine computes in float64
        and returns ``dtype``.
    temporal : {"none", "smooth"}
        ``none`` (default): every frame is its own fit (``dof_std`` from the inverse
        normal matrix times the residual variance). ``smooth``: a constant-acceleration
        prior couples the frames of :func:`~pipeline.solve.solve_sequence` (a forward
        filter and RTS smoother per coordinate, with each frame's own uncertainty as
        its measurement noise, :mod:`pipeline.solve.temporal.marginal`), which then
        needs ``fps``; gaps are bridged and velocities come from the model. Costs about
        1.2x the fit without it (``benchmarks/temporal.py``).
    temporal_noise : float
        Process-noise scale of angles: how far (rad/s^2) an angular acceleration drifts
        in one second, per sqrt(s) (default 10: the lowest angle and velocity errors on
        synthetic fly and mannequin sessions of 1 % noise among 3, 10, 30, 100 and 300,
        with 92-93 % of the true angles inside 1.96 std;
        :mod:`pipeline.solve.temporal.motion_model`). The centre of each coordinate's
        own scale: every coordinate takes the maximum-likelihood scale of its fits
        within 1/4 to 4 times this one (:mod:`pipeline.solve.temporal.noise_fit`).
    temporal_position_noise : float
        The same for the root position and slides, in body sizes (``length_scale``)
        per s^2 per sqrt(s) (default 3), estimated per coordinate around it likewise.
    temporal_noise_fit : bool
        Estimate each coordinate's process-noise scale from its own fits (on 1,500-frame
        mannequin sessions at 1 % noise the RMS velocity error drops from 29-32 % to
        27-28 % of the true RMS). The estimate is made per sequence, so a session fitted
        in chunks gets each chunk's own scales (the seams stay hidden by the overlap, but
        the result depends on the chunking); false (default) keeps the configured scales
        and a chunked session equal to the whole one.
    keypoint_weights : dict of str to float or None
        Per-keypoint weights by joint name (OpenSim's marker-task weights), multiplying
        every frame's observation weights of that keypoint; joints not named keep 1, and
        0 leaves a keypoint out (default None: all 1). Not a confidence: a keypoint's
        weight in the objective in its own right.
    coordinate_tasks : dict of str to [weight, target] or None
        Constant coordinate tasks by DOF name (OpenSim's ``IKCoordinateTask``): each adds
        ``weight * (q - target)^2`` to every frame's objective, ``target`` in DOF units
        (rad, or the plan's length unit), ``weight`` in observation units squared per DOF
        unit squared (default None: no tasks). Per-frame targets go through the
        solvers' ``coordinate_tasks`` argument (:class:`~pipeline.solve.tasks.CoordinateTasks`),
        whose tasks win for a DOF named in both.
    uncertainty : bool
        With ``temporal="none"``, give every frame its own standard deviations and
        observability from the inverse normal matrix at its solution (default True; the
        compiled engine computes them in its kernel, by a selected inversion of the
        tree-sparse system, :mod:`pipeline.solve.compiled.precision`). False skips that
        (the compiled engine then runs 1.1-1.4x faster): ``dof_std`` and the
        root's are NaN and ``dof_observable`` is structural only (an observed keypoint
        hangs below the DOF). ``temporal="smooth"`` always reports its posterior.

    Notes
    -----
    Through calibrated cameras the residuals are pixels: the prior weight and the
    coordinate tasks' weights are multiplied by the square of the mapper's
    ``residual_scale`` (:class:`~pipeline.solve.mappers.CalibratedCameras`: the rig's
    pixels per length unit where its cameras look), so they weigh against pixels as they
    would against the same motion in lengths; tolerances stay in lengths and radians. On
    the image plane (:class:`~pipeline.solve.XYView`) the residuals are plan lengths.
    """

    n_iterations: int = 100
    neutral_weight: float = 3e-6
    position_tolerance: float = 1e-4
    angle_tolerance: float = 1e-4
    tolerance_on: Literal["step", "distance"] = "step"
    damping: float = 1e-6
    dtype: Literal["float64", "float32"] = "float64"
    mode: Literal["gn", "lm"] = "lm"
    lm_initial_damping: float = 1e-3
    cost_tolerance: float = 1e-6
    length_scale: float | None = None
    restarts: int = 0
    loss: LossName = "l2"
    loss_scale: float = 1.0
    min_confidence: float = 0.0
    lanes: int = 512
    warmup_frames: int = 4
    warm_start: Literal["previous", "velocity"] = "previous"
    cold_root: Literal["kabsch", "origin"] = "kabsch"
    engine: Literal["auto", "compiled", "numpy"] = "auto"
    temporal: Literal["none", "smooth"] = "none"
    temporal_noise: float = 10.0
    temporal_position_noise: float = 3.0
    temporal_noise_fit: bool = False
    uncertainty: bool = True
    keypoint_weights: dict[str, float] | None = None
    coordinate_tasks: dict[str, tuple[float, float]] | None = None

    #: Read by pydantic when a model has a ``SolverConfig`` field (a run config's
    #: ``solver``): unknown keys are errors. Not a dataclass field.
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    @classmethod
    def quickik(cls, **changes: Any) -> SolverConfig:
        """QuickIK's exact settings: plain Gauss-Newton, 10 iterations, absolute units.

        ``mode="gn"``, ``n_iterations=10``, ``neutral_weight=1e-3``,
        ``position_tolerance=1e-3``, ``angle_tolerance=1e-3`` (all in the plan's units:
        ``length_scale=1.0``), ``damping=1e-6``; tuned for the fly in millimetres; and,
        as QuickIK computes none, no per-frame uncertainty (``uncertainty=False``). The
        benchmark against QuickIK's Pinocchio peer uses them.

        Parameters
        ----------
        **changes
            Other fields to set (e.g. ``dtype="float32"``).

        Returns
        -------
        SolverConfig
        """
        settings: dict[str, Any] = {
            "mode": "gn",
            "n_iterations": 10,
            "neutral_weight": 1e-3,
            "position_tolerance": 1e-3,
            "angle_tolerance": 1e-3,
            "damping": 1e-6,
            "cost_tolerance": 0.0,
            "length_scale": 1.0,
            "uncertainty": False,
        }
        return cls(**(settings | changes))

    def __post_init__(self) -> None:
        dtype = np.dtype(self.dtype).name if not isinstance(self.dtype, str) else self.dtype
        object.__setattr__(self, "dtype", dtype)
        choices = {
            "dtype": ("float64", "float32"),
            "mode": ("gn", "lm"),
            "loss": LOSS_NAMES,
            "cold_root": ("kabsch", "origin"),
            "warm_start": ("previous", "velocity"),
            "tolerance_on": ("step", "distance"),
            "engine": ("auto", "compiled", "numpy"),
            "temporal": ("none", "smooth"),
        }
        for name, valid in choices.items():
            if getattr(self, name) not in valid:
                raise ConfigError(
                    f"SolverConfig.{name}: {getattr(self, name)!r} is not one of {', '.join(valid)}"
                )
        for name in ("n_iterations", "lanes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"SolverConfig.{name}: must be a positive integer, not {value!r}")
        if (
            isinstance(self.warmup_frames, bool)
            or not isinstance(self.warmup_frames, int)
            or (self.warmup_frames < 0)
        ):
            raise ConfigError(
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
                raise ConfigError(
                    f"SolverConfig.{name}: must be a finite number >= 0, not {value!r}"
                )
        if (
            isinstance(self.restarts, bool)
            or not isinstance(self.restarts, int)
            or self.restarts < 0
        ):
            raise ConfigError(f"SolverConfig.restarts: must be >= 0, not {self.restarts!r}")
        scale = self.length_scale
        if scale is not None and not (
            isinstance(scale, int | float)
            and not isinstance(scale, bool)
            and math.isfinite(scale)
            and scale > 0
        ):
            raise ConfigError(
                f"SolverConfig.length_scale: must be None (the plan's neutral extent) or a "
                f"finite number > 0, not {scale!r}"
            )
        for name in ("temporal_noise", "temporal_position_noise"):
            check_noise(f"SolverConfig.{name}", getattr(self, name))
        if not (isinstance(self.loss_scale, int | float) and self.loss_scale > 0):
            raise ConfigError(f"SolverConfig.loss_scale: must be > 0, not {self.loss_scale!r}")
        if self.keypoint_weights is not None:
            kw = self.keypoint_weights
            if not isinstance(kw, dict) or not all(
                isinstance(k, str)
                and isinstance(v, int | float)
                and not isinstance(v, bool)
                and math.isfinite(v)
                and v >= 0
                for k, v in kw.items()
            ):
                raise ConfigError(
                    "SolverConfig.keypoint_weights: must map joint names to finite numbers "
                    f">= 0, not {kw!r}"
                )
        if self.coordinate_tasks is not None:
            ct = self.coordinate_tasks

            def _pair(v) -> bool:
                return (
                    isinstance(v, list | tuple)
                    and len(v) == 2
                    and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
                    and all(math.isfinite(x) for x in v)
                    and v[0] >= 0
                )

            if not isinstance(ct, dict) or not all(
                isinstance(k, str) and _pair(v) for k, v in ct.items()
            ):
                raise ConfigError(
                    "SolverConfig.coordinate_tasks: must map DOF names to [weight, target] "
                    f"pairs of finite numbers, weight >= 0, not {ct!r}"
                )
        if not isinstance(self.temporal_noise_fit, bool | np.bool_):
            raise ConfigError(
                "SolverConfig.temporal_noise_fit: must be true or false, "
                f"not {self.temporal_noise_fit!r}"
            )
        if not isinstance(self.uncertainty, bool | np.bool_):
            raise ConfigError(
                f"SolverConfig.uncertainty: must be true or false, not {self.uncertainty!r}"
            )

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of :attr:`dtype`."""
        return np.dtype(self.dtype)

    def effective(self, plan: BodyPlan) -> tuple[float, float, float]:
        """The prior weight, position tolerance and angle damping floor applied to ``plan``.

        Parameters
        ----------
        plan : BodyPlan

        Returns
        -------
        neutral_weight : float
            In (observation unit)^2 per rad^2.
        position_tolerance : float
            In the plan's length unit.
        angle_floor : float
            ``scale**2``: an angle coordinate's relative damping is ``lam * max(A_ii,
            scale**2)`` (a position coordinate's ``lam * max(A_ii, 1)``).
        """
        scale = neutral_extent(plan) if self.length_scale is None else float(self.length_scale)
        nw = float(self.neutral_weight) * scale**2
        return nw, float(self.position_tolerance) * scale, scale**2

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (for provenance attrs and fingerprints).

        ``keypoint_weights`` and ``coordinate_tasks`` are left out when None, so fits made
        before they existed keep their fingerprints.
        """
        out = asdict(self)
        for name in ("keypoint_weights", "coordinate_tasks"):
            if out[name] is None:
                del out[name]
            elif name == "coordinate_tasks":
                out[name] = {k: [float(v[0]), float(v[1])] for k, v in out[name].items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SolverConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error listing the valid ones."""
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ConfigError(
                f"unknown solver setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}"
            )
        return cls(**data)


@lru_cache(maxsize=64)
def neutral_extent(plan: BodyPlan) -> float:
    """Largest distance between two keypoints of the plan's neutral pose (length units).

    The length ``SolverConfig(length_scale=None)`` measures the prior weight and position
    tolerance in (fly 3.56 mm, Unitree G1 1.08 m, mannequin 1.74 m); 1.0 for a plan whose
    keypoints all coincide.

    Parameters
    ----------
    plan : BodyPlan

    Returns
    -------
    float
    """
    p = np.asarray(forward_kinematics(plan, plan.neutral), np.float64).reshape(-1, 3)
    d = np.sqrt(np.sum((p[:, None] - p[None]) ** 2, axis=-1)).max(initial=0.0)
    return float(d) if d > 0 and math.isfinite(d) else 1.0
