"""Temporal smoothing cost: fit throughput with ``temporal="smooth"`` against ``"none"``.

Fits one synthetic fly session (1 % noise) with :func:`pipeline.solve.solve_sequence` on
one core, ``--repeats`` times per setting (the settings alternating within each repeat),
and prints the median seconds, frames per second and the ratio smooth / none (the aim
is at most 1.5x), the cost of the per-frame uncertainty (``uncertainty=False`` against
the default), and the angle RMSE of each against the truth.

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
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    plan = load_body_plan(FLY)
    fps = 100.0
    synth = synthesize(
        plan, SynthConfig(n_frames=args.frames, fps=fps, noise=0.01), np.random.default_rng(0)
    )
    targets = synth.tracks.position.values[..., 0].transpose(0, 2, 1).astype(np.float64)
    truth = synth.truth.dof_value.values[:, 0]
    configs = {
        "none": SolverConfig(),
        "smooth": SolverConfig(temporal="smooth"),
        "none, uncertainty off": SolverConfig(uncertainty=False),
    }
    for cfg in configs.values():  # compile or load the kernels, untimed
        solve_sequence(plan, targets[:20], config=cfg, fps=fps)
    runs: dict[str, list[float]] = {k: [] for k in configs}
    results = {}
    for _ in range(args.repeats):  # the settings alternate, so machine noise hits all
        for name, cfg in configs.items():
            t0 = time.perf_counter()
            results[name] = solve_sequence(plan, targets, config=cfg, fps=fps)
            runs[name].append(time.perf_counter() - t0)
    seconds = {k: statistics.median(v) for k, v in runs.items()}
    for name, r in results.items():
        rmse = float(np.sqrt(np.mean((r.dof_value - truth) ** 2)))
        print(
            f"{name:>22}: median {seconds[name]:.3f} s, "
            f"{args.frames / seconds[name]:.0f} frames/s, angle RMSE {rmse:.4f} rad"
        )
    cost = seconds["none"] / seconds["none, uncertainty off"]
    print(f"per-frame uncertainty (temporal='none'): {cost:.2f}x the fit without it")
    print(f"smooth / none: {seconds['smooth'] / seconds['none']:.2f}x")


if __name__ == "__main__":
    main()
