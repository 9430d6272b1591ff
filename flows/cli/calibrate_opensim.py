"""``kinefit calibrate --opensim-setup SETUP_Scale.xml``: an OpenSim Scale setup, run by kinefit.

The logic is :func:`pipeline.opensim_setup.scale_run.run_scale`: the setup's measurement
and manual scale factors, the model scaled, its markers placed by kinefit's fit of the
static trial, the scaled ``.osim`` written where the setup says (or to ``--out``).
"""

from __future__ import annotations

from pathlib import Path

from flows.cli.output import q, say

__all__ = ["scale_from_setup"]


def scale_from_setup(setup: Path, out: Path | None, force: bool) -> None:
    """Run the Scale setup and report its factors; refuses to replace a model unless ``force``."""
    from pipeline.errors import CalibrationError
    from pipeline.opensim_setup.scale_run import run_scale
    from pipeline.opensim_setup.scale_setup import read_scale_setup

    target = out if out is not None else read_scale_setup(setup).output_model_file
    if target.exists() and not force:
        raise CalibrationError(f"{target}: exists; pass --force to replace it")
    run = run_scale(setup, target)
    factors = ", ".join(
        f"{body} {f[0]:.4f}" if abs(f[0] - f[1]) + abs(f[0] - f[2]) < 1e-12 else f"{body} {f}"
        for body, f in sorted(run.factors.items())
    )
    placed = (
        f"; {len(run.placed)} markers placed (static RMS before {run.static_rms * 1000:.2f} mm)"
        if run.static_rms is not None
        else ""
    )
    others = "".join(f" and {q(p)}" for p in run.other_files)
    say(f"[green]scaled[/] {factors}{placed}; wrote {q(run.model_file)}{others}")
    if run.skipped:
        say(f"  not in the model, skipped as OpenSim skips them: {', '.join(run.skipped)}")
