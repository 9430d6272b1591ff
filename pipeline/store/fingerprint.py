"""Fingerprints: decide whether a fit is current for its inputs.

``fingerprint = sha256(input content, body plan sha256, solver config, kinefit version,
keypoint map)`` (DESIGN.md "Data contracts"). The input content hash covers the tracks'
``position`` and ``confidence`` values, the ``time`` coordinate, the keypoint and
individual names and the frame rate. It is computed in fixed blocks of
:data:`HASH_FRAMES` frames, independent of how the store is chunked, so that workers can
hash blocks in parallel (:func:`block_digest`) and the client combines them in order
(:func:`combine_digests`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from pipeline.cluster import run_tasks
from pipeline.store.fit_store import json_text
from pipeline.tracks.schema import TracksError

#: Frames per hashed block of the input content.
HASH_FRAMES = 16_384


def kinefit_version() -> str:
    """Return kinefit's version (``pipeline.__version__``, else the installed metadata)."""
    import pipeline

    found = getattr(pipeline, "__version__", None)
    if found is None:
        try:
            found = version("kinefit")
        except PackageNotFoundError:
            found = "0+unknown"
    return found


class BlockDigest(NamedTuple):
    """Hash of one block of frames and what was observed in it.

    Attributes
    ----------
    digest : str
        sha256 hex of the block's position and confidence bytes.
    start : int
        First frame of the block.
    observed : ndarray, shape (n_keypoints, n_individuals)
        Number of frames in the block where each keypoint of each individual is finite.
    """

    start: int
    digest: str
    observed: np.ndarray


def block_digest(tracks_path: str | Path, start: int, stop: int) -> BlockDigest:
    """Hash frames ``[start, stop)`` of a tracks store (runs on a worker).

    Parameters
    ----------
    tracks_path : str or Path
        Tracks zarr store.
    start, stop : int
        Frame range.

    Returns
    -------
    BlockDigest
    """
    with xr.open_zarr(tracks_path, consolidated=False, chunks=None) as ds:
        ds = ds.rename(
            {
                k: v
                for k, v in {"keypoints": "keypoint", "individuals": "individual"}.items()
                if k in ds.dims
            }
        )
        block = ds.isel(time=slice(start, stop))
        position = np.ascontiguousarray(
            block["position"].transpose("time", "space", "keypoint", "individual").values,
            dtype=np.float32,
        )
        confidence = np.ascontiguousarray(
            block["confidence"].transpose("time", "keypoint", "individual").values,
            dtype=np.float32,
        )
    digest = hashlib.sha256(position.tobytes())
    digest.update(confidence.tobytes())
    observed = np.isfinite(position).all(axis=1).sum(axis=0)
    return BlockDigest(start, digest.hexdigest(), observed)


def block_ranges(n_frames: int) -> list[tuple[int, int]]:
    """Frame ranges of the hashed blocks."""
    return [(s, min(s + HASH_FRAMES, n_frames)) for s in range(0, n_frames, HASH_FRAMES)]


def combine_digests(tracks: xr.Dataset, blocks: Sequence[BlockDigest]) -> str:
    """Input content hash from the block digests and the tracks' coordinates.

    Parameters
    ----------
    tracks : xarray.Dataset
        The (lazy) tracks; only coordinates and ``fps`` are read.
    blocks : sequence of BlockDigest
        In frame order.
    """
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(tracks["time"].values, dtype=np.float64).tobytes())
    meta = {
        "keypoint": [str(v) for v in tracks["keypoint"].values.tolist()],
        "individual": [str(v) for v in tracks["individual"].values.tolist()],
        "space": [str(v) for v in tracks["space"].values.tolist()],
        "fps": tracks.attrs.get("fps"),
    }
    digest.update(json_text(meta).encode())
    for block in blocks:
        digest.update(block.digest.encode())
    return digest.hexdigest()


def fit_fingerprint(
    input_sha256: str,
    body_plan_sha256: str,
    solver_config: Mapping[str, Any],
    keypoint_pairs: Sequence[tuple[str, str]],
    kinefit: str | None = None,
) -> str:
    """Return the fit fingerprint.

    Parameters
    ----------
    input_sha256 : str
        From :func:`combine_digests`.
    body_plan_sha256 : str
        :func:`pipeline.bodyplan.body_plan_sha256` of the plan.
    solver_config : mapping
        ``SolverConfig.to_dict()``.
    keypoint_pairs : sequence of (str, str)
        ``(track keypoint, joint)`` pairs used.
    kinefit : str, optional
        kinefit version; default the installed one.

    Returns
    -------
    str
        64 hex digits.
    """
    payload = {
        "input": input_sha256,
        "body_plan": body_plan_sha256,
        "solver": dict(solver_config),
        "keypoints": [list(p) for p in keypoint_pairs],
        "kinefit": kinefit if kinefit is not None else kinefit_version(),
    }
    return hashlib.sha256(json_text(payload).encode()).hexdigest()


def input_digest(
    tracks_path: str | Path, ds: xr.Dataset, keypoints: Sequence[int], client: Any = None
) -> str:
    """Return the content hash of a tracks store, its blocks hashed on the workers.

    Parameters
    ----------
    tracks_path : str or Path
        Tracks store (the workers read it).
    ds : xarray.Dataset
        The same store opened lazily (coordinates and attrs are hashed from it).
    keypoints : sequence of int
        Keypoints that map to joints; if none of them is observed anywhere the session
        is all-NaN.
    client : distributed.Client, optional

    Returns
    -------
    str
        :func:`combine_digests` of the blocks.

    Raises
    ------
    TracksError
        All-NaN session.
    """
    args = [(str(tracks_path), a, b) for a, b in block_ranges(ds.sizes["time"])]
    blocks, failures = run_tasks(block_digest, args, client)
    if failures:
        raise failures[0][1]
    blocks = sorted(blocks, key=lambda b: b.start)
    if sum(int(b.observed[list(keypoints)].sum()) for b in blocks) == 0:
        raise TracksError(
            f"{tracks_path}: all-NaN session: no keypoint that maps to a joint is observed in "
            "any frame; nothing to fit"
        )
    return combine_digests(ds, blocks)
