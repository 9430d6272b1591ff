"""Fingerprints: decide whether a fit is current for its inputs.

``fingerprint = sha256(input content, body plan sha256, solver config, kinefit version,
keypoint map)``. The input content hash covers the tracks'
``position`` and ``confidence`` values, the ``time`` coordinate, the keypoint and
individual names and the frame rate. It is computed in fixed blocks of
:data:`HASH_FRAMES` frames, independent of how the store is chunked, so that workers can
hash blocks in parallel (:func:`block_digest`) and the client combines them in order
(:func:`combine_digests`).

While hashing, the workers also check the content: an unreadable (corrupt) chunk or an
infinite position or confidence is a :class:`~pipeline.tracks.schema.TracksError` naming
the store, the field and the first bad frame, and each block measures how large the
mapped keypoints are against the same joints of the body plan's neutral pose (for
:func:`pipeline.tracks.scale.check_scale`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from pipeline import __version__
from pipeline.cluster import run_tasks
from pipeline.provenance.hashing import canonical_json, json_sha256, new_digest
from pipeline.store.tracks import read_frames
from pipeline.tracks.schema import PLURAL_DIMS, TracksError

#: Frames per hashed block of the input content.
HASH_FRAMES = 16_384
POSITION_DIMS = ("time", "space", "keypoint", "individual")
CONFIDENCE_DIMS = ("time", "keypoint", "individual")


class InputScan(NamedTuple):
    """What :func:`scan_input` found.

    Attributes
    ----------
    digest : str
        Content hash (:func:`combine_digests`).
    scale : float
        Median over frames and individuals of the observed keypoints' extent divided by
        the extent of the same keypoints in the reference pose; NaN without a reference
        or when no frame observes two keypoints.
    seen : (float, float), optional
        With a confidence ``level``: the share of the keypoints' observations that are
        finite and at least that confident (NaN confidence counts), and the share of
        frame-individuals with any such observation.
    """

    digest: str
    scale: float
    seen: tuple[float, float] | None = None


def kinefit_version() -> str:
    """Return kinefit's version (``pipeline.__version__``: the installed metadata's)."""
    return __version__


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
    scale : ndarray, shape (n_individuals,), optional
        Median over the block's frames (every ``len // SCALE_FRAMES``-th one) of the
        extent (largest coordinate range) of the observed reference keypoints divided by
        the extent of their reference points; NaN where no sampled frame observes two of
        them; None without a reference.
    confident : ndarray, shape (2,), optional
        With a confidence ``level``: the keypoints' confident observations, and the
        frame-individuals with any (see :attr:`InputScan.seen`).
    """

    start: int
    digest: str
    observed: np.ndarray
    scale: np.ndarray | None = None
    confident: np.ndarray | None = None


def _refuse_infinite(values: np.ndarray, name: str, dims, ds, start: int, where: str) -> None:
    bad = np.isinf(values)
    if not bad.any():
        return
    first = np.argwhere(bad)[0]
    at = [f"frame {start + int(first[0])}"] + [
        f"{d} {str(ds[d].values[i])[:80]!r}" if d in ds.coords else f"{d} {i}"
        for d, i in zip(dims[1:], first[1:], strict=True)
        if d != "space"
    ]
    what = "missing keypoints are NaN" if name == "position" else "unknown confidence is NaN"
    raise TracksError(
        f"{where}: field {name!r}: {int(bad.sum())} infinite value(s) (first at "
        f"{', '.join(at)}); {what}, never infinite"
    )


#: Frames per block (about) whose extent enters the scale estimate.
SCALE_FRAMES = 256


def _scale(position: np.ndarray, keypoints: Sequence[int], reference: np.ndarray) -> np.ndarray:
    """Median over frames of track extent / reference extent of the same keypoints.

    ``position`` is ``(T, S, K, I)``; ``reference`` ``(len(keypoints), 3)``. A frame
    counts when at least two of the keypoints are observed and their reference points
    are apart. Returns ``(n_individuals,)``, NaN where no frame counts.
    """
    sub = position[:, :, list(keypoints), :].astype(np.float64)  # (T, S, K, I)
    seen = np.isfinite(sub).all(axis=1)  # (T, K, I)
    ref = np.where(seen[:, None], np.asarray(reference, np.float64).T[None, :, :, None], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # frames with nothing observed
        track = np.nanmax(np.nanmax(sub, axis=2) - np.nanmin(sub, axis=2), axis=1)  # (T, I)
        plan = np.nanmax(np.nanmax(ref, axis=2) - np.nanmin(ref, axis=2), axis=1)
        floor = 1e-6 * float(np.max(np.ptp(reference, axis=0))) if len(reference) else 0.0
        usable = (seen.sum(axis=1) >= 2) & (plan > floor)
        ratio = np.where(usable, track / np.where(usable, plan, 1.0), np.nan)
        return np.nanmedian(ratio, axis=0)


def block_digest(
    tracks_path: str | Path,
    start: int,
    stop: int,
    keypoints: Sequence[int] | None = None,
    reference: np.ndarray | None = None,
    level: float | None = None,
) -> BlockDigest:
    """Hash and check frames ``[start, stop)`` of a tracks store (runs on a worker).

    Parameters
    ----------
    tracks_path : str or Path
        Tracks zarr store.
    start, stop : int
        Frame range.
    keypoints : sequence of int, optional
        Keypoints whose size to compare with ``reference`` (those that map to joints).
    reference : ndarray, shape (len(keypoints), 3), optional
        Where those keypoints sit in a reference pose (the body plan's neutral pose).
    level : float, optional
        Count the keypoints' observations at least this confident
        (:attr:`BlockDigest.confident`).

    Returns
    -------
    BlockDigest

    Raises
    ------
    TracksError
        A chunk cannot be read, or a position or confidence is infinite.
    """
    where = f"{tracks_path}"
    position = read_frames(tracks_path, "position", POSITION_DIMS, start, stop)
    confidence = read_frames(tracks_path, "confidence", CONFIDENCE_DIMS, start, stop)
    for name, values, dims in (
        ("position", position, POSITION_DIMS),
        ("confidence", confidence, CONFIDENCE_DIMS),
    ):
        if np.isinf(values).any():  # the labels of the message need the coordinates
            with xr.open_zarr(tracks_path, consolidated=False, chunks=None) as ds:
                ds = ds.rename({k: v for k, v in PLURAL_DIMS.items() if k in ds.dims})
                block = ds.isel(time=slice(start, stop))
                _refuse_infinite(values, name, dims, block, start, where)
    digest = new_digest()
    digest.update(position.tobytes())
    digest.update(confidence.tobytes())
    observed = np.isfinite(position).all(axis=1).sum(axis=0)
    scale = None
    if keypoints is not None and reference is not None:
        # a unit check needs the median's order of magnitude, not every frame's ratio
        step = max(1, position.shape[0] // SCALE_FRAMES)
        scale = _scale(position[::step], keypoints, reference)
    confident = None
    if keypoints is not None and level is not None:
        index = list(keypoints)
        conf = confidence[:, index, :]
        ok = np.isfinite(position[:, :, index, :]).all(axis=1) & ((conf >= level) | np.isnan(conf))
        confident = np.array([ok.sum(), ok.any(axis=1).sum()], dtype=np.int64)
    return BlockDigest(start, digest.hexdigest(), observed, scale, confident)


def store_signature(path: str | Path) -> str:
    """sha256 of every file's relative path, size, inode, mtime and ctime in a store.

    Any write to a file of the store moves its ctime (which no tool can set back), and a
    copy has new inodes, so an unchanged signature means the store's bytes are the ones
    that were last scanned; a changed one only means "scan again". ``path`` may also be
    a single file (a raw session file; its relative path is empty).
    """
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    digest = new_digest()
    for file in files:
        st = file.stat()
        name = str(file.relative_to(root)) if file != root else ""
        entry = (name, st.st_size, st.st_ino, st.st_mtime_ns)
        digest.update(repr((*entry, st.st_ctime_ns)).encode())
    return digest.hexdigest()


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
    digest = new_digest()
    digest.update(np.ascontiguousarray(tracks["time"].values, dtype=np.float64).tobytes())
    meta = {
        "keypoint": [str(v) for v in tracks["keypoint"].values.tolist()],
        "individual": [str(v) for v in tracks["individual"].values.tolist()],
        "space": [str(v) for v in tracks["space"].values.tolist()],
        "fps": tracks.attrs.get("fps"),
    }
    digest.update(canonical_json(meta).encode())
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
    return json_sha256(payload)


def input_digest(
    tracks_path: str | Path, ds: xr.Dataset, keypoints: Sequence[int], client: Any = None
) -> str:
    """Return the content hash of a tracks store (:func:`scan_input`'s digest)."""
    return scan_input(tracks_path, ds, keypoints, client).digest


def scan_input(
    tracks_path: str | Path,
    ds: xr.Dataset,
    keypoints: Sequence[int],
    client: Any = None,
    reference: np.ndarray | None = None,
    level: float | None = None,
) -> InputScan:
    """Hash and check a tracks store, its blocks read on the workers.

    The one pass over the data before a fit: it also measures the scale (with a
    ``reference``) and how much of the session is confidently observed (with a ``level``).

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
    reference : ndarray, shape (len(keypoints), 3), optional
        The joints those keypoints observe, in the body plan's neutral pose: gives
        :attr:`InputScan.scale`.
    level : float, optional
        Confidence an observation needs to count in :attr:`InputScan.seen`.

    Returns
    -------
    InputScan

    Raises
    ------
    TracksError
        All-NaN session, unreadable chunk, infinite position or confidence (the earliest
        bad block is reported).
    """
    keypoints = list(keypoints)
    ranges = block_ranges(ds.sizes["time"])
    args = [(str(tracks_path), a, b, keypoints, reference, level) for a, b in ranges]
    blocks, failures = run_tasks(block_digest, args, client)
    if failures:
        raise min(failures, key=lambda f: f[0][1])[1]
    blocks = sorted(blocks, key=lambda b: b.start)
    if sum(int(b.observed[list(keypoints)].sum()) for b in blocks) == 0:
        raise TracksError(
            f"{tracks_path}: all-NaN session: no keypoint that maps to a joint is observed in "
            "any frame; nothing to fit"
        )
    scale = float("nan")
    if reference is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no frame with two keypoints
            scale = float(np.nanmedian(np.concatenate([b.scale for b in blocks])))
    seen = None
    if level is not None:
        counts = np.sum([b.confident for b in blocks], axis=0)
        frame_individuals = ds.sizes["time"] * ds.sizes["individual"]
        seen = (
            float(counts[0]) / (frame_individuals * len(keypoints)),
            float(counts[1]) / frame_individuals,
        )
    return InputScan(combine_digests(ds, blocks), scale, seen)
