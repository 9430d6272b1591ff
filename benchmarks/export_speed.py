"""Export speed: every automatic exporter over one fitted mannequin session.

Fits a synthetic mannequin session (two individuals) once, then runs each exporter of
:data:`pipeline.export.exporter_registry.AUTOMATIC_EXPORTS` that applies to the mannequin (``mot``
and ``qpos`` need imported plans) ``--repeats`` times, and prints the median seconds, the
frames per second (frames x individuals) and the ratio to the fit's own time; also
:func:`pipeline.bodyplan.angles.joint_angles` alone.

Run::

    .venv/bin/python benchmarks/export_speed.py               # 10k frames
    .venv/bin/python benchmarks/export_speed.py --frames 50000

Never part of the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bodyplan import mannequin  # noqa: E402
from pipeline.bodyplan.angles import joint_angles  # noqa: E402
from pipeline.export import export  # noqa: E402
from pipeline.export.common import fit_plan  # noqa: E402
from pipeline.fit import fit_session  # noqa: E402
from pipeline.solve import SolverConfig  # noqa: E402
from pipeline.store import open_fit, write_tracks  # noqa: E402
from pipeline.synth import SynthConfig, synthesize  # noqa: E402

SUFFIXES = {"csv": ".csv", "bvh": ".bvh", "trc": ".trc", "nwb": ".nwb", "movement": ".nc"}


def _median(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    plan = mannequin()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        config = SynthConfig(n_frames=args.frames, fps=100.0, n_individuals=2, noise=0.001)
        synth = synthesize(plan, config, np.random.default_rng(1), session="bench")
        tracks = write_tracks(synth.tracks.assign_attrs(up_axis="y"), root / "t.zarr")
        t0 = time.perf_counter()
        fit_session(tracks, plan, SolverConfig(), root / "f.zarr", chunk_frames=args.frames // 4)
        fit_s = time.perf_counter() - t0
        ds = open_fit(root / "f.zarr")
        stored = fit_plan(ds)
        frames = args.frames * 2
        print(f"{args.frames} frames x 2 individuals; fit {fit_s:.2f} s (in process)")
        print(f"{'step':<14}{'median s':>10}{'frames/s':>12}{'x fit':>8}")
        angles_s = _median(lambda: joint_angles(ds, stored), args.repeats)
        print(f"{'joint_angles':<14}{angles_s:>10.3f}{frames / angles_s:>12,.0f}")
        for name, suffix in SUFFIXES.items():
            out = root / f"out{suffix}"
            seconds = _median(
                lambda n=name, o=out: export(n, root / "f.zarr", o, overwrite=True), args.repeats
            )
            print(f"{name:<14}{seconds:>10.3f}{frames / seconds:>12,.0f}{seconds / fit_s:>8.2f}")


if __name__ == "__main__":
    main()
