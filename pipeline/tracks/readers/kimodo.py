"""Reader for Kimodo constraints files: IK targets on a Kimodo skeleton.

A constraints file (the Kimodo format) holds rotations, not points; the targets are Kimodo's FK of
them on a skeleton from a skeletons JSON file, so the reader needs ``skeleton_file`` and
``skeleton`` (``kinefit ingest c.json --format kimodo --skeleton-file F --skeleton S``).
See :mod:`pipeline.export.kimodo.targets` for how each entry type becomes targets.
"""

from __future__ import annotations

import re
from pathlib import Path

import xarray as xr

from pipeline.errors import flag
from pipeline.tracks.readers.reader_helpers import fail, head_text

FORMAT = "kimodo"
SUFFIXES: tuple[str, ...] = (".json",)
_START = re.compile(r"^\s*\[\s*\{")


def sniff(path: str | Path) -> bool:
    """Return True if the file starts a JSON array of objects with ``type``/``frame_indices``."""
    head = head_text(path)
    return bool(_START.match(head)) and '"type"' in head and '"frame_indices"' in head


def read(
    path: str | Path,
    *,
    skeleton_file: str | Path | None = None,
    skeleton: str | None = None,
    n_frames: int | None = None,
    meta: str | Path | None = None,
    root2d_weight: float | None = None,
) -> xr.Dataset:
    """Read a Kimodo constraints file as a tracks dataset.

    Parameters
    ----------
    path : str or Path
        The constraints JSON.
    skeleton_file : str or Path
        Kimodo skeletons JSON (required).
    skeleton : str
        Skeleton the file is written for, e.g. ``somaskel30`` (required).
    n_frames : int, optional
        Clip length (default: one past the last constrained frame, or ``meta``'s).
    meta : str or Path, optional
        A ``meta.json``; default the one beside ``path``.
    root2d_weight : float, optional
        Confidence of root-path targets (default
        :data:`pipeline.export.kimodo.targets.ROOT2D_WEIGHT`).

    Returns
    -------
    xarray.Dataset
        Keypoints are the skeleton's joints, metres, +Y up, 30 fps (the file's rate: a
        different ``fps`` is ignored with a warning).
    """
    from pipeline.export.kimodo.targets import read as read_targets

    if skeleton_file is None or skeleton is None:
        raise fail(
            path,
            f"the kimodo reader needs {flag('skeleton_file')} and {flag('skeleton')}: "
            "the file holds rotations on a Kimodo skeleton",
        )
    weight = {} if root2d_weight is None else {"root2d_weight": root2d_weight}
    return read_targets(
        path, skeleton_file=skeleton_file, skeleton=skeleton, n_frames=n_frames, meta=meta, **weight
    )
