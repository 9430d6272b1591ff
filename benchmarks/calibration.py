"""Subject calibration: time for 1000 frames, the shape steps compared, fit throughput after.

For the mannequin and the fly (the synthetic subjects of ``tests/unit/calibrate/subjects.py``:
segments scaled per symmetric group by up to 15 %, an overall scale, markers 2-5 % of the
body off their joints, 0.2 % noise, 2 % dropouts) it prints, on one core:

- the calibration time of 1000 frames with the Schur-complement joint Gauss-Newton and with
  the alternation (linear shape step with the poses held), their iterations and their worst
  segment-length error;
- the fit throughput (``solve_sequence``, warm frames/s, median of repeats) with the
  template and with the calibrated plan, and their ratio (it must stay within 5 %).

Run: ``.venv/bin/python benchmarks/calibration.py [--frames 1000] [--repeats 5]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"  # one core: before numpy is imported

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.calibrate import CalibrationConfig, calibrate  # noqa: E402
from pipeline.solve import solve_sequence  # noqa: E402
from tests.unit.calibrate.subjects import (  # noqa: E402
    fly_template,
    make_subject,
    mannequin_template,
    render,
    targets_of,
)


def _worst_length_error(template, subject, cal, params) -> float:
    got = np.linalg.norm([j.offset_pos for j in cal.plan.joints], axis=1)
    true = np.linalg.norm([j.offset_pos for j in subject.joints], axis=1)
    seg = [
        i
        for i, j in enumerate(template.joints)
        if j.parent is not None and any(j.offset_pos) and i not in params.markers
    ]
    return float(np.max(np.abs(got[seg] / true[seg] - 1)))


def _throughput(plans, targets, conf, repeats: int) -> list[tuple[float, float]]:
    """Per plan: median warm frames/s and mean iterations per frame; repeats interleaved."""
    for plan in plans:
        solve_sequence(plan, targets[:50], conf[:50])  # compile / warm caches
    rates: list[list[float]] = [[] for _ in plans]
    iterations = [0.0 for _ in plans]
    for _ in range(repeats):  # interleaved, so that load on the machine hits both alike
        for k, plan in enumerate(plans):
            t0 = time.perf_counter()
            fit = solve_sequence(plan, targets, conf)
            rates[k].append(len(targets) / (time.perf_counter() - t0))
            iterations[k] = float(np.mean(fit.iterations))
    return [(float(np.median(r)), it) for r, it in zip(rates, iterations, strict=True)]


def main() -> None:
    """Print the figures for both bodies."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000, help="calibration frames")
    parser.add_argument("--repeats", type=int, default=5, help="throughput repeats")
    parser.add_argument("--fit-frames", type=int, default=5000, help="frames per fit")
    parser.add_argument("--methods", default="schur,alternation", help="shape steps to time")
    args = parser.parse_args()
    bodies = {
        "mannequin": (mannequin_template(), {"up": "y", "unit": "m"}, 1.08),
        "fly": (fly_template(), {"up": "z", "unit": "mm"}, 0.95),
    }
    for name, (template, where, scale) in bodies.items():
        rng = np.random.default_rng(16)
        subject, _, params = make_subject(template, rng, scale=scale)
        session = render(subject, rng, n_frames=max(args.frames, args.fit_frames), **where)
        tracks = session.tracks.isel(time=slice(0, args.frames))
        calibrate(template, tracks.isel(time=slice(0, 60)), CalibrationConfig(min_frames=10))
        cal = None
        for method in args.methods.split(","):
            t0 = time.perf_counter()
            result = calibrate(
                template, tracks, CalibrationConfig(n_frames=args.frames, method=method)
            )
            seconds = time.perf_counter() - t0
            rec = result.record
            stop = "converged" if rec["converged"] else "cap"
            worst = _worst_length_error(template, subject, result, params)
            print(
                f"{name:9s} {method:11s} {rec['n_frames']} frames: {seconds:6.2f} s, "
                f"{rec['iterations']:2d} iterations ({stop}), worst segment length "
                f"{worst:.2%}, keypoint RMS {result.rms_before:.4g} -> {result.rms_after:.4g}"
            )
            cal = cal or result
        targets, conf = targets_of(session)
        targets, conf = targets[: args.fit_frames], conf[: args.fit_frames]
        (base, it0), (after, it1) = _throughput([template, cal.plan], targets, conf, args.repeats)
        print(
            f"{name:9s} fit throughput: template {base:8.0f} frames/s ({it0:.1f} iterations/"
            f"frame), calibrated {after:8.0f} frames/s ({it1:.1f}), ratio {after / base:.3f}"
        )


if __name__ == "__main__":
    main()
