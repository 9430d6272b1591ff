"""CSV export of fitted DOF trajectories (one row per frame and individual).

Columns: ``time`` (seconds), ``frame``, ``individual``, the root pose (``root_x``,
``root_y``, ``root_z`` in length units; ``root_qw`` .. ``root_qz``), then one column per
DOF named like the fit's ``dof`` coordinate (``knee/0``; radians for rotations, length
units for slides), then ``rms_error`` and ``converged``. Reads the canonical pose of the
fit store (DESIGN.md); the file is written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.store.fit import open_fit

__all__ = ["export_csv"]


def export_csv(
    fit: str | Path, out: str | Path, *, individual: str | None = None, overwrite: bool = False
) -> Path:
    """Write the DOF trajectories of a fit store as a CSV file.

    Parameters
    ----------
    fit : str or Path
        A complete fit store.
    out : str or Path
        The CSV file.
    individual : str, optional
        Only this individual (default: all, stacked).
    overwrite : bool
        Replace an existing file.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    FileExistsError
        ``out`` exists and ``overwrite`` is false.
    KeyError
        ``individual`` is not in the fit (the message lists the individuals).
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out}: already exists; pass overwrite to replace it")
    ds = open_fit(fit)
    names = [str(v) for v in ds["individual"].values]
    if individual is not None and individual not in names:
        raise KeyError(f"{fit}: no individual {individual!r}; individuals: {', '.join(names)}")
    fps = ds.attrs.get("fps")
    time = np.asarray(ds["time"].values, dtype=np.float64)
    frames = np.arange(time.size) if not fps else np.rint(time * float(fps)).astype(np.int64)
    dofs = [str(d) for d in ds["dof"].values]
    tables = []
    for i, name in enumerate(names):
        if individual is not None and name != individual:
            continue
        columns = {"time": time, "frame": frames, "individual": name}
        root = ds["root_position"].isel(individual=i).values
        quat = ds["root_orientation"].isel(individual=i).values
        columns |= {f"root_{a}": root[:, k] for k, a in enumerate("xyz")}
        columns |= {f"root_q{a}": quat[:, k] for k, a in enumerate("wxyz")}
        values = ds["dof_value"].isel(individual=i).values
        columns |= {dof: values[:, k] for k, dof in enumerate(dofs)}
        columns["rms_error"] = ds["rms_error"].isel(individual=i).values
        columns["converged"] = ds["converged"].isel(individual=i).values
        tables.append(pd.DataFrame(columns))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        pd.concat(tables, ignore_index=True).to_csv(tmp, index=False, float_format="%.9g")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
