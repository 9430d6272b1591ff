"""The demo archive: a few synthetic mannequin sessions written as raw tracking files.

:func:`write_demo_archive` renders sessions with :func:`pipeline.synth.synthesize` (known
motion, so the fit can be judged) and writes them the way a lab's archive looks: movement
netCDF files (which record their frame rate) and one long-layout CSV (which does not; the
run config's ``archive.fps`` fills in). The sessions differ in what makes fitting hard:
clean, noisy, dropouts, outliers, and two individuals at once. Each session's known
answer (:attr:`pipeline.synth.SynthSession.truth`) goes beside it as ``truth/<name>.nc``,
where the report finds it (:func:`pipeline.inspect.data.truth.open_truth`) to show the fit's
error against the truth; the archive's patterns (``*.nc``) do not reach into ``truth/``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.store.atomic import atomic_file
from pipeline.synth import SynthConfig, synthesize

__all__ = ["DEMO_SESSIONS", "write_demo_archive"]

#: Session name -> (file suffix, how it differs from a clean single-individual session).
DEMO_SESSIONS: dict[str, tuple[str, dict[str, float | int]]] = {
    "walk_clean": (".nc", {}),
    "walk_noisy": (".nc", {"noise": 0.01}),
    "walk_dropouts": (".nc", {"noise": 0.003, "dropout": 0.15, "dropout_run": 10}),
    "walk_outliers": (".nc", {"noise": 0.003, "outliers": 0.02}),
    "pair_csv": (".csv", {"n_individuals": 2, "noise": 0.005, "dropout": 0.05}),
}


def _write_netcdf(ds: xr.Dataset, path: Path) -> None:
    attrs = {k: v for k, v in ds.attrs.items() if v is not None}
    ds.drop_attrs(deep=False).assign_attrs(attrs).to_netcdf(path)


def _write_csv(ds: xr.Dataset, path: Path) -> None:
    """Long layout (frame, individual, keypoint, x, y, z, confidence); no frame rate."""
    position = ds["position"].transpose("time", "individual", "keypoint", "space").values
    confidence = ds["confidence"].transpose("time", "individual", "keypoint").values
    n_time, n_ind, n_kp, _ = position.shape
    index = pd.MultiIndex.from_product(
        [np.arange(n_time), ds["individual"].values, ds["keypoint"].values],
        names=["frame", "individual", "keypoint"],
    )
    flat = position.reshape(-1, 3)
    table = pd.DataFrame(
        {"x": flat[:, 0], "y": flat[:, 1], "z": flat[:, 2], "confidence": confidence.ravel()},
        index=index,
    ).dropna(subset=["x"])
    table.reset_index().to_csv(path, index=False, float_format="%.6g")


def write_demo_archive(
    folder: str | Path,
    plan: BodyPlan,
    rng: np.random.Generator,
    *,
    n_frames: int = 360,
    fps: float = 60.0,
    unit: str = "m",
    up_axis: str = "y",
) -> list[Path]:
    """Write the demo sessions (:data:`DEMO_SESSIONS`) into ``folder``.

    Parameters
    ----------
    folder : str or Path
        Created if needed; existing demo files are kept as they are (so a second demo
        run sees an unchanged archive and skips everything).
    plan : BodyPlan
        The body the sessions are rendered from (the mannequin in the demo).
    rng : numpy.random.Generator
        The only source of randomness.
    n_frames : int
        Frames per session.
    fps : float
        Frame rate (Hz); recorded in the netCDF files, not in the CSV.
    unit, up_axis : str
        The plan's length unit and up axis (the mannequin's: metres, +Y), recorded in
        the tracks so summaries and reports label lengths correctly.

    Returns
    -------
    list of Path
        The session files, existing or new.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = SynthConfig(
        n_frames=n_frames, fps=fps, max_frequency=0.8, amplitude=0.35, unit=unit, up_axis=up_axis
    )
    paths = []
    for name, (suffix, changes) in DEMO_SESSIONS.items():
        path = folder / f"{name}{suffix}"
        session = synthesize(plan, replace(base, **changes), rng, session=name)
        paths.append(path)
        truth = folder / "truth" / f"{name}.nc"
        if not truth.exists():
            with atomic_file(truth) as tmp:
                session.truth.assign_attrs(session=name).to_netcdf(tmp)
        if path.exists():
            continue
        with atomic_file(path) as tmp:
            (_write_netcdf if suffix == ".nc" else _write_csv)(session.tracks, tmp)
    return paths
