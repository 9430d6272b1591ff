"""Reader for Kimodo constraints files: IK targets on a Kimodo skeleton.

A constraints file (KIMODO.md) holds rotations, not points; the targets are Kimodo's FK of
them on a skeleton from a skeletons JSON file, so the reader needs ``skeleton_file`` and
``skeleton`` (``kinefit ingest c.json --format kimodo --skeleton-file F --skeleton S``).
See :mod:`pipeline.export.kimodo.targets` for how each entry type becomes targets.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import xarray as xr

from pipeline.tracks.readers._common import check_options, fail, head_text

FORMAT = "kimodo"
SUFFIXES: tuple[str, ...] = (".json",)
OPTIONS: tuple[str, ...] = ("skeleton_file", "skeleton", "n_frames", "meta", "root2d_weight")
_START = re.compile(r"^\s*\[\s*\{")


def sniff(path: str | Path) -> bool:
    """Return True if the file starts a JSON array of objects with ``type``/``frame_indices``."""
    head = head_text(path)
    return bool(_START.match(head)) and '"type"' in head and '"frame_indices"' in head


def read(
    path: str | Path,
    *,
    fps: float | None = None,
    skeleton_file: str | Path | None = None,
    skeleton: str | None = None,
    **options: Any,
) -> xr.Dataset:
    """Read a Kimodo constraints file as a tracks dataset.

    Parameters
    ----------
    path : str or Path
        The constraints JSON.
    fps : float, optional
        Not used: Kimodo files are 30 fps, and a file's own rate wins
        (:func:`~pipeline.tracks.formats.read_tracks` warns about a different ``fps``).
    skeleton_file : str or Path
        Kimodo skeletons JSON (required).
    skeleton : str
        Skeleton the file is written for, e.g. ``somaskel30`` (required).
    **options
        ``n_frames`` (clip length), ``meta`` (a ``meta.json``; default the one beside
        ``path``), ``root2d_weight`` (confidence of root-path targets).

    Returns
    -------
    xarray.Dataset
        Keypoints are the skeleton's joints, metres, +Y up, 30 fps.
    """
    from pipeline.export.kimodo.targets import read as read_targets

    check_options(path, FORMAT, {k: v for k, v in options.items() if k not in OPTIONS}, OPTIONS)
    if skeleton_file is None or skeleton is None:
        raise fail(
            path,
            "the kimodo reader needs skeleton_file= and skeleton= (--skeleton-file, "
            "--skeleton): the file holds rotations on a Kimodo skeleton",
        )
    return read_targets(path, skeleton_file=skeleton_file, skeleton=skeleton, **options)
