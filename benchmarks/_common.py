"""Shared helpers of the benchmarks: default paths, the QuickIK fixtures, settings, statistics.

Importing this module imports numpy: scripts that pin BLAS threads must set the environment
before importing it.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: ``../shared`` beside the checkout, like the tests; override with KINEFIT_SHARED.
SHARED = Path(os.environ.get("KINEFIT_SHARED", REPO.parent / "shared")).resolve()
QUICKIK = SHARED / "data" / "quickik"
DEFAULT_BODY_PLAN = QUICKIK / "neuromechfly_ypr_legs.json"
DEFAULT_FIXTURES = QUICKIK / "fixtures.json"


@dataclass(frozen=True)
class GaussNewtonSettings:
    """The solver settings both sides of a comparison use (QuickIK's defaults).

    Attributes
    ----------
    n_iterations : int
        Maximum Gauss-Newton steps per frame.
    neutral_weight : float
        Neutral-prior weight (times each DOF's ``weight_scaler``).
    position_tolerance : float
        Early stop: largest position update (length units, here mm).
    angle_tolerance : float
        Early stop: largest angle update (rad).
    damping : float
        Relative Levenberg-Marquardt damping.
    """

    n_iterations: int = 10
    neutral_weight: float = 1e-3
    position_tolerance: float = 1e-3
    angle_tolerance: float = 1e-3
    damping: float = 1e-6

    def kwargs(self) -> dict[str, float | int]:
        """The settings as keyword arguments (for ``PinGaussNewton`` / ``SolverConfig``)."""
        return asdict(self)


@dataclass(frozen=True)
class QuickIKFixtures:
    """QuickIK's fly fixtures with one target row per body-plan joint (NaN = missing).

    Attributes
    ----------
    synthetic : (8, n_joints, 3) float64
        Exactly reachable targets (mm), root at identity.
    synthetic_dofs : (8, n_dofs) float64
        Their ground-truth DOF values (rad), body-plan DOF order.
    real : (22, n_joints, 3) float64
        Real mocap frames (mm), every 30th recording frame.
    native : (300, n_joints, 3) float64
        300 consecutive real frames at 330 Hz (mm).
    """

    synthetic: np.ndarray
    synthetic_dofs: np.ndarray
    real: np.ndarray
    native: np.ndarray


def load_fixtures(path: str | Path, joint_names: Sequence[str]) -> QuickIKFixtures:
    """Read ``fixtures.json`` and lay its rows out on the body plan's joints.

    Parameters
    ----------
    path : str or Path
        QuickIK's ``fixtures.json``.
    joint_names : sequence of str
        The body plan's joint names in order; every ``leg_joint_names`` entry must be one.

    Returns
    -------
    QuickIKFixtures

    Raises
    ------
    ValueError
        When a fixture keypoint names no joint of the body plan.
    """
    path = Path(path)
    raw = json.loads(path.read_text())
    names = list(joint_names)
    unknown = [n for n in raw["leg_joint_names"] if n not in names]
    if unknown:
        raise ValueError(
            f"{path}: field 'leg_joint_names': {', '.join(unknown)} not in the body plan; "
            f"valid joints: {', '.join(names)}"
        )
    rows = np.array([names.index(n) for n in raw["leg_joint_names"]])

    def layout(frames: list[dict]) -> np.ndarray:
        out = np.full((len(frames), len(names), 3), np.nan)
        out[:, rows] = np.array([f["target_ego"] for f in frames], dtype=np.float64)
        return out

    synth = raw["synthetic_frames"]
    # Grouped per leg, not per joint: flatten in list order (body-plan DOF order).
    truth = np.array(
        [
            np.concatenate(
                [np.asarray(g, np.float64) for g in f["ground_truth_dof_angles_per_leg"]]
            )
            for f in synth
        ]
    )
    return QuickIKFixtures(
        synthetic=layout(synth),
        synthetic_dofs=truth,
        real=layout(raw["real_frames"]),
        native=layout(raw["native_rate_frames"]),
    )


def keypoint_rms(fitted: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per-frame RMS distance over observed keypoints.

    Parameters
    ----------
    fitted, targets : (T, n_joints, 3) arrays
        NaN target rows are missing and left out.

    Returns
    -------
    (T,) float64
    """
    d2 = np.sum((np.asarray(fitted, np.float64) - targets) ** 2, axis=-1)
    return np.sqrt(np.nanmean(d2, axis=-1))


def ping_pong(frames: np.ndarray, length: int) -> np.ndarray:
    """``frames`` played forward then reversed, repeated, cut to ``length`` frames."""
    cycle = np.concatenate([frames, frames[::-1]])
    reps = -(-length // len(cycle))
    return np.concatenate([cycle] * reps)[:length]


def time_repeated(run: Callable[[], int], min_seconds: float) -> float:
    """Call ``run`` (which returns how many frames it solved) until ``min_seconds`` passed.

    Returns
    -------
    float
        Frames per second over the whole span.
    """
    frames = 0
    start = time.perf_counter()
    while True:
        frames += run()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return frames / elapsed


def commit() -> str:
    """The checkout's short commit (``+dirty`` with uncommitted changes; ``unknown``)."""
    git = ["git", "-C", str(REPO)]
    try:
        run = [[*git, "rev-parse", "--short", "HEAD"], [*git, "status", "--porcelain", "-uno"]]
        head, dirty = (subprocess.run(c, capture_output=True, text=True, check=True) for c in run)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else the platform's processor."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def where_measured(load_before: float | None = None) -> str:
    """One line saying where and when a benchmark ran, for printing beside its figures.

    The CPU, its core count, the load average (before the run when ``load_before`` is
    given, and now), the commit and the UTC date and time.
    """
    load = f"{os.getloadavg()[0]:.2f}"
    if load_before is not None:
        load = f"{load_before:.2f} before, {load} after"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{_cpu_model()}, {os.cpu_count()} cores, load average {load}; commit {commit()}; {now}"
