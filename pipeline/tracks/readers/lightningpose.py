"""LightningPose prediction CSVs: DeepLabCut's single-animal table.

LightningPose writes its predictions with DeepLabCut's three header rows (``scorer``,
``bodyparts``, ``coords``) and ``x, y, likelihood`` per keypoint, with the scorer named
after the model (``heatmap_tracker``, ``heatmap_mhcrnn_tracker``, ...); predictions on
labeled frames add a ``set`` column (train/validation/test) that is skipped. Sniffing
tells it from DeepLabCut by that scorer or column; ``format="lightningpose"`` forces it.

Attrs: ``unit`` ``"px"`` and ``up_axis`` ``"-y"`` (image coordinates, rows grow
downwards). The files do not record the frame rate: ``fps=`` is required.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from pipeline.tracks.readers import dlc
from pipeline.tracks.readers.reader_helpers import fail

FORMAT = "lightningpose"
SUFFIXES = (".csv",)
SOFTWARE = "LightningPose"


def sniff(path: str | Path) -> bool:
    """Return True for a DeepLabCut-style CSV whose scorer is a LightningPose model."""
    rows = dlc.csv_header_cells(path)
    return rows is not None and dlc.looks_like_lightning_pose(rows)


def read(path: str | Path, *, fps: float | None = None) -> xr.Dataset:
    """Read a LightningPose prediction CSV.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    fps : float
        Frames per second (not in the file): required.

    Returns
    -------
    xarray.Dataset
        One individual; ``position (time, space=[x, y], keypoint, individual)`` in pixels
        (up axis ``"-y"``), ``confidence`` = likelihood, ``time`` in seconds.

    Raises
    ------
    TracksError
        Everything :func:`pipeline.tracks.readers.dlc.read` rejects, and an
        ``individuals`` header row (LightningPose is single-animal: use ``format="dlc"``).
    """
    path = Path(path)
    table = dlc.parse_csv(path)
    if any(c[1] is not None for c in table.columns):
        raise fail(
            path,
            "has an 'individuals' header row, but LightningPose files are single-animal; "
            "read it with format='dlc'",
        )
    if any(c[3] == "z" for c in table.columns):
        raise fail(path, "has a 'z' coord, but LightningPose predictions are 2D (x, y)")
    return dlc.build_dataset(path, table, software=SOFTWARE, fmt=FORMAT, fps=fps)
