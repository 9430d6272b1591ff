"""Single-core solver throughput: kinefit against the Pinocchio peer, in one run (issues 2, 15).

Workloads (QuickIK's fly, ``fixtures.json``; the Unitree G1 with ``--body-plan
../shared/data/quickik-g1/g1_body_plan.json --fixtures .../fixtures_g1.json``):

- warm: the 300 native-rate frames played forward then reversed, repeated, handed to
  ``solve_sequence`` in calls of ``--chunk-frames`` frames (default: a tracks store's time
  chunk, the frames one ``pipeline.fit`` task solves; each call starts cold at its first
  frame, both sides), timed for at least ``--seconds`` per repeat after a warm-up;
- cold: the 22 real frames, each solved alone from the neutral pose (``solve_frames`` one
  frame at a time; kinefit also all 22 in one batched call).

Both sides run QuickIK's settings (``SolverConfig.quickik()``: plain Gauss-Newton, 10
iterations, no per-frame uncertainty, which the peer does not compute); the same with
``uncertainty=True`` is timed beside them (its cost); kinefit with its own defaults
(``SolverConfig()``, adaptive LM measured in the body's size) is timed on the warm workload
too, so users see what the default costs. The
compiled kernels are loaded (``pipeline.solve.compiled.warm_up``) before anything is timed.

Figures are medians over ``--repeats`` repeats, kinefit and the peer alternating within each
repeat so that machine noise hits both; ratios are taken between medians of this run.
Keypoint RMS (pooled over all observed keypoints and frames) and iterations per frame are
reported beside the speeds so that speed is not bought with accuracy; both sides' RMS is
computed with the same (Pinocchio) forward kinematics from their fitted poses.

Run ``python benchmarks/solver_throughput.py --help``; ``make bench`` runs it with defaults.
"""

from __future__ import annotations

import os

# One core: BLAS / OpenMP thread pools are sized when numpy loads, so pin them first.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402
from _common import (  # noqa: E402
    DEFAULT_BODY_PLAN,
    DEFAULT_FIXTURES,
    GaussNewtonSettings,
    keypoint_rms,
    load_fixtures,
    ping_pong,
    time_repeated,
    where_measured,
)
from pin_peer import PinGaussNewton, check_peer  # noqa: E402

from pipeline.bodyplan import load_body_plan  # noqa: E402
from pipeline.store.tracks import DEFAULT_CHUNK_FRAMES  # noqa: E402

#: Issue 33's bars, warm throughput against the peer in the same run: QuickIK's settings per
#: kinefit dtype, and kinefit's defaults (adaptive LM, per-frame uncertainty) in either.
REQUIRED_WARM_SPEEDUP = {"float32": 30.0, "float64": 25.0}
REQUIRED_DEFAULTS_SPEEDUP = 20.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--body-plan", type=Path, default=DEFAULT_BODY_PLAN)
    p.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    p.add_argument("--seconds", type=float, default=3.0, help="minimum timed span per repeat")
    p.add_argument(
        "--dtype",
        choices=["float32", "float64"],
        default="float32",
        help="kinefit's precision (float32, its production setting, reaches the same RMS)",
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--chunk-frames",
        type=int,
        default=DEFAULT_CHUNK_FRAMES,
        help="frames per solve_sequence call (warm); default: a tracks store's time chunk",
    )
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument(
        "--unit",
        default=None,
        help="length unit for the labels (default: the plan's; mm for QuickIK's fly; m for G1)",
    )
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.repeats < 1 or args.chunk_frames < 1:
        p.error("--seconds must be > 0, --repeats and --chunk-frames >= 1")
    return args


def _kinefit(plan, settings: GaussNewtonSettings, dtype: np.dtype):
    """kinefit's ``solve_sequence`` / ``solve_frames`` bound to ``plan`` and the settings.

    Returns ``None`` when the solver cannot be imported from this checkout.
    """
    try:
        from pipeline.solve import SolverConfig, solve_frames, solve_sequence
        from pipeline.solve.compiled import warm_up
    except ImportError as exc:
        print(f"kinefit's solver is not importable ({exc}): measuring the peer alone\n")
        return None
    # QuickIK's algorithm on both sides: plain Gauss-Newton, squared loss, absolute units.
    seconds = warm_up(lambda text: print(text, file=sys.stderr))
    if seconds:
        print(f"  kernels ready in {seconds:.1f} s (untimed)", file=sys.stderr)
    config = SolverConfig.quickik(**settings.kwargs(), dtype=dtype.name)
    defaults = SolverConfig(dtype=dtype.name)
    no_prior = SolverConfig.quickik(
        **(settings.kwargs() | {"neutral_weight": 0.0}), dtype=dtype.name
    )
    with_std = replace(config, uncertainty=True)
    return {
        "config": config,
        "defaults": defaults,
        "sequence": lambda t: solve_sequence(plan, t, config=config),
        "sequence_std": lambda t: solve_sequence(plan, t, config=with_std),
        "sequence_defaults": lambda t: solve_sequence(plan, t, config=defaults),
        "frames": lambda t: solve_frames(plan, t, config=config),
        "frames_no_prior": lambda t: solve_frames(plan, t, config=no_prior),
    }


def _as_q(peer: PinGaussNewton, result) -> np.ndarray:
    """A kinefit ``FitResult`` as Pinocchio configurations ``(T, nq)``."""
    parts = (result.dof_value, result.root_position, result.root_orientation)
    d, p, o = (np.asarray(x, np.float64) for x in parts)
    return np.array([peer.join(*row) for row in zip(d, p, o, strict=True)])


def _fk(peer: PinGaussNewton, q: np.ndarray) -> np.ndarray:
    return np.array([peer.keypoints(x) for x in q])


def _pooled_rms(fitted: np.ndarray, targets: np.ndarray) -> float:
    return float(np.sqrt(np.mean(keypoint_rms(fitted, targets) ** 2)))


def _angle_error_deg(dofs: np.ndarray, truth: np.ndarray) -> float:
    d = np.asarray(dofs, np.float64) - truth
    return float(np.degrees(np.abs((d + np.pi) % (2 * np.pi) - np.pi).max()))


def _per_frame(solve_one, frames: list[np.ndarray]):
    """A timing run: solve each frame alone; returns how many frames it solved."""

    def run() -> int:
        for f in frames:
            solve_one(f)
        return len(frames)

    return run


def accuracy(peer: PinGaussNewton, kin, fx, stream: np.ndarray, dtype: np.dtype) -> dict:
    """Untimed: keypoint RMS, iterations and known-answer checks of both sides."""
    q, its = peer.solve_sequence(stream)
    cold = [peer.solve(x) for x in fx.real]
    out = {
        "n_cold": len(fx.real),
        "pinocchio": {
            "warm_rms_mm": _pooled_rms(_fk(peer, q), stream),
            "warm_iterations": float(its.mean()),
            "cold_rms_mm": _pooled_rms(_fk(peer, np.array([c for c, _ in cold])), fx.real),
            "cold_iterations": float(np.mean([n for _, n in cold])),
            **check_peer(peer.plan, fx.synthetic, fx.synthetic_dofs),
        },
    }
    tight = GaussNewtonSettings(n_iterations=50, position_tolerance=1e-10, angle_tolerance=1e-10)
    ref = PinGaussNewton(peer.plan, **tight.kwargs())
    cycle = ping_pong(fx.native, 2 * len(fx.native))  # one pass forward and back
    q_ref = ref.solve_sequence(cycle)[0]
    q_cold = np.array([ref.solve(x)[0] for x in fx.real])
    out["converged"] = {
        "n_iterations": tight.n_iterations,
        "warm_rms_mm": _pooled_rms(_fk(peer, q_ref), cycle),
        "cold_rms_mm": _pooled_rms(_fk(peer, q_cold), fx.real),
    }
    if kin is None:
        return out
    warm, cold = kin["sequence"](stream.astype(dtype)), kin["frames"](fx.real.astype(dtype))
    fw, fc = _fk(peer, _as_q(peer, warm)), _fk(peer, _as_q(peer, cold))
    gap = max(
        np.nanmax(np.abs(fw - np.asarray(warm.fitted_position))),
        np.nanmax(np.abs(fc - np.asarray(cold.fitted_position))),
    )
    dflt = kin["sequence_defaults"](stream.astype(dtype))
    fd = _fk(peer, _as_q(peer, dflt))
    synth = kin["frames_no_prior"](fx.synthetic.astype(dtype))
    out["kinefit"] = {
        "warm_rms_mm": _pooled_rms(fw, stream),
        "warm_iterations": float(np.mean(warm.iterations)),
        "cold_rms_mm": _pooled_rms(fc, fx.real),
        "cold_iterations": float(np.mean(cold.iterations)),
        "recovery_max_deg": _angle_error_deg(synth.dof_value, fx.synthetic_dofs),
        "fitted_positions_vs_pinocchio_fk_mm": float(gap),
        "defaults_warm_rms_mm": _pooled_rms(fd, stream),
        "defaults_warm_iterations": float(np.mean(dflt.iterations)),
        "defaults_warm_converged": float(np.mean(dflt.stop_reason == 0)),
    }
    return out


def speed(peer: PinGaussNewton, kin, fx, stream: np.ndarray, args) -> dict:
    """Timed: frames/s of every workload (latency = 1 / that), the sides alternating."""
    dtype = np.dtype(args.dtype)
    runs = {
        "warm_fps/pinocchio": lambda: len(peer.solve_sequence(stream)[1]),
        "cold_fps/pinocchio": _per_frame(peer.solve, list(fx.real)),
    }
    if kin is not None:
        stream_k, real_k = stream.astype(dtype), fx.real.astype(dtype)
        one = [real_k[i : i + 1] for i in range(len(real_k))]
        runs["warm_fps/kinefit"] = lambda: len(kin["sequence"](stream_k).iterations)
        runs["warm_fps/kinefit_std"] = lambda: len(kin["sequence_std"](stream_k).iterations)
        runs["warm_fps/kinefit_defaults"] = lambda: len(
            kin["sequence_defaults"](stream_k).iterations
        )
        runs["cold_fps/kinefit"] = _per_frame(kin["frames"], one)
        runs["cold_fps/kinefit_batched"] = lambda: len(kin["frames"](real_k).iterations)
    # Warm-up: accuracy() already made one call of every workload but this one.
    if kin is not None:
        time_repeated(runs["cold_fps/kinefit"], 0.0)
    cold_seconds = max(0.5, args.seconds / 3)
    samples: dict[str, list[float]] = {k: [] for k in runs}
    for i in range(args.repeats):
        for k, run in runs.items():
            samples[k].append(time_repeated(run, args.seconds if "warm" in k else cold_seconds))
        print(f"  repeat {i + 1}/{args.repeats}", file=sys.stderr, flush=True)
    return {k: statistics.median(v) for k, v in samples.items()} | {"samples": samples}


def _verdict(ratio: float, bar: float) -> str:
    return "MET" if ratio >= bar else "NOT MET"


def report(args, plan, kin, acc: dict, med: dict) -> str:
    has_k = kin is not None
    lines = [
        f"kinefit vs Pinocchio {pin.__version__}: {plan.name or args.body_plan.name}, "
        f"{plan.n_joints} joints, {plan.n_dofs} DOFs"
        f"{'' if plan.fixed_base else ' + free root'}; kinefit in {args.dtype}, peer in float64",
        f"one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1); medians of {args.repeats} repeats "
        f"(warm >= {args.seconds:g} s each)",
        where_measured(args.load_before),
        f"settings (both sides): {GaussNewtonSettings()}",
        f"kinefit: {kin['config'] if has_k else 'not measured'}",
        "",
        f"{'':44}{'kinefit':>12}{'Pinocchio':>12}{'speed-up':>10}",
    ]

    def row(label, k, p, fmt, up=None):
        ks = format(k, fmt) if k is not None else "-"
        us = f"{up:.1f}x" if up is not None else ""
        lines.append(f"{label:44}{ks:>12}{format(p, fmt):>12}{us:>10}")

    kp = med.get("warm_fps/kinefit")
    pp = med["warm_fps/pinocchio"]
    row(f"warm frames/s ({args.chunk_frames}-frame calls)", kp, pp, ".0f", kp and kp / pp)
    pc = 1e6 / med["cold_fps/pinocchio"]
    kc = 1e6 / med["cold_fps/kinefit"] if has_k else None
    row("cold latency/frame, one at a time (us)", kc, pc, ".0f", kc and pc / kc)
    kb = 1e6 / med["cold_fps/kinefit_batched"] if has_k else None
    n_cold = acc["n_cold"]
    row(f"cold latency/frame, {n_cold} at once (us) [1]", kb, pc, ".0f", kb and pc / kb)
    a_k, a_p = acc.get("kinefit", {}), acc["pinocchio"]
    u = args.unit
    for key, label, fmt in [
        ("warm_rms_mm", f"warm keypoint RMS ({u})", ".5f"),
        ("warm_iterations", "warm iterations/frame", ".2f"),
        ("cold_rms_mm", f"cold keypoint RMS, {n_cold} real frames ({u})", ".5f"),
        ("cold_iterations", "cold iterations/frame", ".2f"),
        ("recovery_max_deg", "synthetic recovery, prior off (max deg)", ".1e"),
    ]:
        row(label, a_k.get(key), a_p[key], fmt)
    ref = acc["converged"]
    lines += [
        f"[1] kinefit solves the {n_cold} frames in one call; the peer has no batch mode",
        f"converged optimum (peer, {ref['n_iterations']} iterations, tolerances 1e-10): "
        f"warm RMS {ref['warm_rms_mm']:.5f} {u} (one pass forward and back), "
        f"cold RMS {ref['cold_rms_mm']:.5f} {u}",
        f"peer FK of the synthetic ground truth: max error {a_p['fk_max_error']:.1e} {u}",
    ]
    if has_k:
        gap = a_k["fitted_positions_vs_pinocchio_fk_mm"]
        lines.append(f"kinefit fitted_position vs Pinocchio FK of its pose: {gap:.1e} {u}")
        ks = med["warm_fps/kinefit_std"]
        lines.append(
            f"kinefit QuickIK settings with per-frame uncertainty (uncertainty=True, on by "
            f"default): warm {ks:.0f} frames/s ({ks / pp:.1f}x the peer; the uncertainty "
            f"costs {kp / ks:.2f}x)"
        )
        kd = med["warm_fps/kinefit_defaults"]
        lines.append(
            f"kinefit defaults ({kin['defaults'].mode}, size-scaled): warm {kd:.0f} frames/s "
            f"({kd / pp:.1f}x the peer's QuickIK loop), RMS {a_k['defaults_warm_rms_mm']:.5f} "
            f"{u}, {a_k['defaults_warm_iterations']:.2f} iterations/frame, "
            f"{100 * a_k['defaults_warm_converged']:.1f}% converged"
        )
        body = plan.name or args.body_plan.stem
        bar = REQUIRED_WARM_SPEEDUP[args.dtype]
        lines.append(
            f"{body}: warm throughput >= {bar:g}x Pinocchio in {args.dtype} with QuickIK's "
            f"settings: measured {kp / pp:.1f}x -> {_verdict(kp / pp, bar)}; kinefit's "
            f"defaults >= {REQUIRED_DEFAULTS_SPEEDUP:g}x: measured {kd / pp:.1f}x -> "
            f"{_verdict(kd / pp, REQUIRED_DEFAULTS_SPEEDUP)}"
        )
    else:
        lines.append("kinefit not measured: no speed-up against Pinocchio")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.load_before = os.getloadavg()[0]
    settings = GaussNewtonSettings()
    plan = load_body_plan(args.body_plan)
    # QuickIK's fly is in mm; another plan that records no unit is labelled as such
    default = "mm" if args.body_plan.resolve() == DEFAULT_BODY_PLAN.resolve() else "plan units"
    args.unit = args.unit or plan.unit or default
    fx = load_fixtures(args.fixtures, plan.joint_names)
    peer = PinGaussNewton(plan, **settings.kwargs())
    kin = _kinefit(plan, settings, np.dtype(args.dtype))
    stream = ping_pong(fx.native, args.chunk_frames)
    acc = accuracy(peer, kin, fx, stream, np.dtype(args.dtype))
    med = speed(peer, kin, fx, stream, args)
    print(report(args, plan, kin, acc, med))
    if args.json is not None:
        record = {"args": {k: str(v) for k, v in vars(args).items()}, "accuracy": acc, **med}
        args.json.write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
