"""A rerun skips a current fit in milliseconds, but never a fit of changed tracks.

The skip check reuses the input digest recorded in the fit store when the tracks store's
files are untouched (same paths, sizes, inodes, mtimes and ctimes); any write to the
tracks, even one that restores size and mtime afterwards, moves a ctime and forces the
full content scan, whose fingerprint then decides.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import zarr

from pipeline.fit import fit_session
from pipeline.provenance.fingerprint import store_signature
from pipeline.solve import SolverConfig
from pipeline.store.fit import open_fit


def _copy(small_session, tmp_path):
    tracks = tmp_path / "t.zarr"
    shutil.copytree(small_session[0], tracks)
    return tracks


def test_untouched_tracks_are_skipped(fly, small_session, solver, tmp_path):
    tracks = _copy(small_session, tmp_path)
    first = fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    assert open_fit(first.out).attrs["tracks_signature"] == store_signature(tracks)
    again = fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    assert again.skipped and again.fingerprint == first.fingerprint


def test_tracks_changed_in_place_are_refitted(fly, small_session, solver, tmp_path):
    tracks = _copy(small_session, tmp_path)
    fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    position = zarr.open_array(tracks / "position", mode="r+")
    chunk = next(p for p in sorted((tracks / "position" / "c").rglob("*")) if p.is_file())
    stat = chunk.stat()
    position[5, :, :, :] = position[5, :, :, :] + np.float32(0.01)
    os.utime(chunk, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # mtime restored: ctime moved
    report = fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    assert not report.skipped and report.chunks_fitted == (0, 1, 2)


def test_a_copy_with_the_same_content_is_skipped_after_a_scan(fly, small_session, solver, tmp_path):
    tracks = _copy(small_session, tmp_path)
    fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    shutil.rmtree(tracks)
    shutil.copytree(small_session[0], tracks)  # new inodes, same bytes
    report = fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    assert report.skipped
    assert open_fit(report.out).attrs["tracks_signature"] != store_signature(tracks)


def test_other_settings_are_refitted(fly, small_session, solver, tmp_path):
    tracks = _copy(small_session, tmp_path)
    fit_session(tracks, fly, solver, tmp_path / "fit.zarr")
    report = fit_session(tracks, fly, SolverConfig(n_iterations=11), tmp_path / "fit.zarr")
    assert not report.skipped
