"""Temporal smoothing cost: fit throughput with ``temporal="smooth"`` against ``"none"``.

Fits one synthetic fly session (1 % noise) with :func:`pipeline.solve.solve_sequence` on
one core, ``--repeats`` times per setting, and prints the median seconds, frames per
second and the ratio smooth / none (issue 17 asks at most 1.5x), plus the angle RMSE of
both against the truth.

Run::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/temporal.py              # 1000 frames
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/temporal.py --frames 4000

Never part of the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bodyplan import load_body_plan  # noqa: E402
from pipeline.solve import SolverConfig, solve_sequence  # noqa: E402
from pipeline.synth import SynthConfig, synthesize  # noqa: E402

FLY = Path("/work/shared/data/quickik/neuromechfly_ypr_legs.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    plan = load_body_plan(FLY)
    fps = 100.0
    synth = synthesize(
        plan, SynthConfig(n_frames=args.frames, fps=fps, noise=0.01), np.random.default_rng(0)
    )
    targets = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    truth = synth.truth.dof_value.values[:, 0]
    solve_sequence(plan, targets[:20], config=SolverConfig(temporal="smooth"), fps=fps)  # jit
    seconds = {}
    for temporal in ("none", "smooth"):
        cfg = SolverConfig(temporal=temporal)
        runs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            r = solve_sequence(plan, targets, config=cfg, fps=fps)
            runs.append(time.perf_counter() - t0)
        seconds[temporal] = statistics.median(runs)
        rmse = float(np.sqrt(np.mean((r.dof_value - truth) ** 2)))
        print(
            f"{temporal:>6}: median {seconds[temporal]:.3f} s, "
            f"{args.frames / seconds[temporal]:.0f} frames/s, angle RMSE {rmse:.4f} rad"
        )
    print(f"smooth / none: {seconds['smooth'] / seconds['none']:.2f}x")


if __name__ == "__main__":
    main()
