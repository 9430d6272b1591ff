"""Faults 3 and 5: I/O errors while writing, a full disk, a read-only output folder.

Transient ``OSError`` while writing a chunk (injected by ``FailWrites`` of
``tests/fixtures/faults.py``, handed to ``fit_session(chunk_task=...)``) is retried; a
persistent one fails the session with the error recorded in the partial store, never a
short store. A full disk is a real tmpfs of a few hundred KiB mounted for the test (root
only; otherwise simulated with an injected ENOSPC), a read-only folder a tmpfs mounted
read-only (root) or a chmod 555 folder (other users). Each gives one FitError naming the
folder; an existing fit is left intact and another session fits normally.
"""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from pipeline.fit import FitError, fit_chunk, fit_session
from pipeline.solve import SolverConfig
from pipeline.store.atomic import partial_path
from pipeline.store.attrs import store_attrs
from pipeline.store.chunks import done_chunks
from pipeline.store.fit import open_fit
from tests.fixtures.faults import FailWrites
from tests.fixtures.reliability_fixtures import same_fit
from tests.fixtures.reliability_helpers import assert_unchanged, remount, snapshot, tmpfs

ROOT = os.geteuid() == 0


def test_transient_write_errors_are_retried(fly, small_session, solver, tmp_path):
    tracks, reference = small_session
    faults = FailWrites.of({0: (1, "EIO"), 2: (2, "EIO")}, tmp_path)  # once, and twice
    report = fit_session(tracks, fly, solver, tmp_path / "fit.zarr", chunk_task=faults)
    assert report.chunks_fitted == (0, 1, 2)
    same_fit(tmp_path / "fit.zarr", reference)


def test_persistent_write_error_fails_the_session_loudly(fly, small_session, solver, tmp_path):
    tracks, reference = small_session
    out = tmp_path / "fit.zarr"
    faults = FailWrites.of({1: (None, "EIO")}, tmp_path)
    with pytest.raises(
        FitError,
        match=r"1 of 3 chunks failed \(\[1\]\).*rerun to resume.*OSError: \[Errno 5\] "
        r".*chunk 1: Input/output error.*after 3 attempt",
    ):
        fit_session(tracks, fly, solver, out, chunk_task=faults)
    assert not out.exists()  # never a short store under the final name
    partial = partial_path(out)
    assert done_chunks(partial).tolist() == [True, False, True]
    failed = store_attrs(partial)["failed"]
    assert failed["chunks"] == [1] and "Input/output error" in failed["errors"][0]
    report = fit_session(tracks, fly, solver, out)
    assert report.chunks_fitted == (1,)
    assert "failed" not in open_fit(out).attrs
    same_fit(out, reference)


def test_failed_refit_keeps_the_complete_store(fly, small_session, solver, tmp_path):
    tracks, _ = small_session
    out = tmp_path / "fit.zarr"
    fit_session(tracks, fly, solver, out)
    before = snapshot(out, digest=True)
    faults = FailWrites.of({0: (None, "EIO")}, tmp_path)
    with pytest.raises(FitError, match="chunk 0: Input/output error"):
        fit_session(tracks, fly, SolverConfig(neutral_weight=1e-2), out, chunk_task=faults)
    assert_unchanged(before, out)


def _store_bytes(folder) -> int:
    """Space a store takes on a tmpfs: its files rounded up to 4 KiB pages."""
    return sum(-(-p.stat().st_size // 4096) * 4096 for p in folder.rglob("*") if p.is_file())


def test_full_disk(fly, fly_tracks, solver, tmp_path):
    """A refit that fills the disk fails with one clear error; the old fit and another
    session's fit are unaffected."""
    from pipeline.store import write_tracks

    tracks = write_tracks(fly_tracks, tmp_path / "t.zarr", chunk_frames=20)
    probe = fit_session(tracks, fly, solver, tmp_path / "probe" / "fit.zarr").out
    size = _store_bytes(probe) * 3 // 2 + 64 * 1024  # room for one store, not two
    chunk_task = fit_chunk
    with tmpfs(tmp_path / "disk", f"{size // 1024}k") as disk:
        if disk is None:
            if ROOT:
                pytest.skip("mount -t tmpfs is not permitted here")
            chunk_task = FailWrites.of({1: (None, "ENOSPC")}, tmp_path)  # simulated full disk
            disk = tmp_path / "disk"
        out = disk / "fit.zarr"
        fit_session(tracks, fly, solver, out)
        before = snapshot(out, digest=True)
        with pytest.raises(FitError, match=r"No space left on device") as info:
            refit = SolverConfig(neutral_weight=1e-2)
            fit_session(tracks, fly, refit, out, chunk_task=chunk_task)
        assert str(out) in str(info.value)
        assert_unchanged(before, out)
        xr_fit = open_fit(out)
        assert xr_fit.attrs["solver_config"]["neutral_weight"] == solver.neutral_weight
        other = fit_session(tracks, fly, SolverConfig(neutral_weight=1e-2), tmp_path / "b.zarr")
        assert not other.skipped and np.isfinite(open_fit(other.out)["dof_value"]).all()


def test_read_only_output_folder(fly, fly_tracks, solver, tmp_path, monkeypatch):
    from pipeline.store import write_tracks

    tracks = write_tracks(fly_tracks, tmp_path / "t.zarr", chunk_frames=20)
    with tmpfs(tmp_path / "ro", "4m") as folder:
        if folder is None:
            if ROOT:
                pytest.skip("mount -t tmpfs is not permitted here (root ignores chmod)")
            folder = tmp_path / "ro"
        out = folder / "fit.zarr"
        fit_session(tracks, fly, solver, out)
        before = snapshot(folder, digest=True)
        if ROOT:
            remount(folder, read_only=True)
        else:
            folder.chmod(0o555)
        try:
            reason = "Read-only file system" if ROOT else "Permission denied"
            with pytest.raises(FitError, match=re.escape(str(out)) + ".*" + reason):
                fit_session(tracks, fly, SolverConfig(neutral_weight=1e-2), out)
            with pytest.raises(FitError, match=reason):
                fit_session(tracks, fly, solver, folder / "new.zarr")
            assert_unchanged(before, folder)
        finally:
            if ROOT:
                remount(folder, read_only=False)
            else:
                folder.chmod(0o755)
    other = fit_session(tracks, fly, solver, tmp_path / "b.zarr")
    assert not other.skipped


def test_mount_helper_cleans_up(tmp_path):
    with tmpfs(tmp_path / "m", "64k") as folder:
        if folder is None:
            pytest.skip("mount -t tmpfs is not permitted here")
    mounts = subprocess.run(["cat", "/proc/mounts"], capture_output=True, text=True).stdout
    assert str(tmp_path / "m") not in mounts
