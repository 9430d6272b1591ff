"""Archive discovery (globs, manifests, fsspec URLs), safe session names, incremental ingest."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.archive.discover import (
    DiscoveryError,
    SessionSource,
    check_session_name,
    discover_sessions,
    session_store,
)
from pipeline.archive.ingest import ingest_session
from pipeline.config import ArchiveConfig
from pipeline.store import open_tracks
from tests.fixtures.flows_samples import demo_archive

CSV = "frame,keypoint,x,y,z\n0,pelvis,0,0,1\n1,pelvis,0.1,0,1\n2,pelvis,0.2,0,1\n"


def _tree(root, files):
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_globs_name_sessions_by_stem_or_relative_path(tmp_path):
    _tree(tmp_path, {"m1/day 1.csv": CSV, "m2/day2.csv": CSV, "notes.txt": "x", "m1/a.b.csv": CSV})
    stems = discover_sessions(ArchiveConfig(path=str(tmp_path), patterns=["**/*.csv"]))
    assert [s.name for s in stems] == ["a", "day2", "day_1"]  # unsafe characters replaced
    relative = discover_sessions(
        ArchiveConfig(path=str(tmp_path), patterns=["**/*.csv"], naming="relative", fps=30)
    )
    assert [s.name for s in relative] == ["m1/a", "m1/day_1", "m2/day2"]
    assert relative[0].url == str(tmp_path / "m1" / "a.b.csv") and relative[0].fps == 30


def test_two_files_making_one_session_is_an_error(tmp_path):
    _tree(tmp_path, {"a/s1.csv": CSV, "b/s1.csv": CSV})
    with pytest.raises(DiscoveryError, match="both make session 's1'; use naming: relative"):
        discover_sessions(ArchiveConfig(path=str(tmp_path), patterns=["**/*.csv"]))
    with pytest.raises(DiscoveryError, match="no such archive folder"):
        discover_sessions(ArchiveConfig(path=str(tmp_path / "absent")))


def test_manifest_names_sessions_and_sets_readers(tmp_path):
    _tree(tmp_path, {"raw/x.csv": CSV, "raw/y.csv": CSV})
    (tmp_path / "sessions.yaml").write_text(
        "sessions:\n"
        "  - {name: mouse1/day1, file: raw/x.csv, fps: 50}\n"
        "  - {name: mouse2, file: raw/y.csv, format: csv, options: {a: 1}}\n"
    )
    archive = ArchiveConfig(path=str(tmp_path), manifest="sessions.yaml", fps=10)
    one, two = discover_sessions(archive)
    assert (one.name, one.fps, one.url) == ("mouse1/day1", 50, str(tmp_path / "raw" / "x.csv"))
    assert (two.name, two.fps, two.format, dict(two.options)) == ("mouse2", 10, "csv", {"a": 1})


@pytest.mark.parametrize(
    ("entry", "detail"),
    [
        ("{name: ../../x, file: raw/x.csv}", "unsafe session name '../../x'"),
        ("{name: /etc/x, file: raw/x.csv}", "unsafe session name '/etc/x'"),
        ("{name: .hidden, file: raw/x.csv}", "unsafe session name '.hidden'"),
        ("{name: a/../b, file: raw/x.csv}", "unsafe session name"),
        ("{name: ok, file: ../outside.csv}", "must stay inside the archive"),
        ("{name: ok, path: raw/x.csv}", "unknown keys \\['path'\\]"),
        ("{file: raw/x.csv}", "needs name and file"),
    ],
)
def test_bad_manifest_entries_are_rejected(tmp_path, entry, detail):
    (tmp_path / "m.yaml").write_text(f"sessions:\n  - {entry}\n")
    with pytest.raises(DiscoveryError, match=rf"m\.yaml: sessions\[0\].*{detail}"):
        discover_sessions(ArchiveConfig(path=str(tmp_path), manifest="m.yaml"))


def test_session_stores_never_leave_the_output_root(tmp_path):
    root = tmp_path / "fits"
    assert session_store(root, "m1/day2") == root / "m1" / "day2.zarr"
    for name in ("../../x", "/abs/x", "a/../../x", "..", "", "a\\b", "a//b"):
        with pytest.raises(DiscoveryError):
            session_store(root, name)
    assert check_session_name("m-1_x.y/d2") == "m-1_x.y/d2"


def test_fsspec_url_archive(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe({"/lab/raw/s1.csv": CSV.encode(), "/lab/raw/s2.csv": CSV.encode()})
    try:
        sessions = discover_sessions(ArchiveConfig(path="memory://lab/raw", patterns=["*.csv"]))
        assert [s.name for s in sessions] == ["s1", "s2"]
        assert sessions[0].url == "memory:///lab/raw/s1.csv"
        source = SessionSource("s1", sessions[0].url, fps=25.0)
        report = ingest_session(source, tmp_path / "s1.zarr", chunk_frames=2)
        assert report.n_frames == 3 and report.fps == 25.0 and not report.skipped
        assert open_tracks(tmp_path / "s1.zarr").attrs["source_file"] == sessions[0].url
    finally:
        fs.rm("/lab", recursive=True)


def test_ingest_is_skipped_when_nothing_changed(tmp_path, plan):
    (path,) = [
        p for p in demo_archive(tmp_path / "raw", plan, n_frames=40) if p.stem == "walk_clean"
    ]
    source = SessionSource("walk_clean", str(path))
    out = tmp_path / "tracks" / "walk_clean.zarr"
    first = ingest_session(source, out, chunk_frames=16)
    assert not first.skipped and (first.n_frames, first.n_keypoints) == (40, plan.n_joints)
    ds = open_tracks(out)
    assert ds.attrs["session"] == "walk_clean" and ds["position"].chunks[0][0] == 16
    position = ds["position"].values
    again = ingest_session(source, out, chunk_frames=16)
    assert again.skipped and again.n_frames == 40
    assert not ingest_session(source, out, chunk_frames=8).skipped  # other chunking
    assert not ingest_session(source, out, chunk_frames=8, force=True).skipped
    np.testing.assert_array_equal(open_tracks(out)["position"].values, position)


def test_an_untouched_raw_file_is_not_read_again_and_a_changed_one_is(tmp_path, monkeypatch):
    import os

    import pipeline.archive.ingest as ingest

    path = tmp_path / "raw" / "s.csv"
    _tree(tmp_path / "raw", {"s.csv": CSV})
    source = SessionSource("s", str(path), fps=30.0)
    out = tmp_path / "tracks" / "s.zarr"
    hashed = []
    real = ingest.tree_sha256
    monkeypatch.setattr(ingest, "tree_sha256", lambda p: hashed.append(p) or real(p))
    assert not ingest_session(source, out, chunk_frames=16).skipped
    assert len(hashed) == 1
    assert ingest_session(source, out, chunk_frames=16).skipped
    assert len(hashed) == 1  # same file, same stat: the recorded content hash is reused
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched, same bytes
    assert ingest_session(source, out, chunk_frames=16).skipped
    assert len(hashed) == 2  # hashed again: the content decides
    path.write_text(CSV.replace("0.2,0,1", "0.3,0,1"))  # changed bytes
    assert not ingest_session(source, out, chunk_frames=16).skipped
    assert len(hashed) == 3
    np.testing.assert_allclose(open_tracks(out)["position"].values[2, 0, 0, 0], 0.3)


def test_ingest_refuses_to_replace_what_is_not_a_tracks_store(tmp_path):
    (tmp_path / "s.csv").write_text(CSV)
    precious = tmp_path / "precious.zarr"
    precious.mkdir()
    (precious / "data.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a tracks store"):
        ingest_session(SessionSource("s", str(tmp_path / "s.csv"), fps=10), precious)
    assert (precious / "data.txt").read_text() == "keep me"
    with pytest.raises(FileNotFoundError, match="no such session file"):
        ingest_session(SessionSource("s", str(tmp_path / "none.csv")), tmp_path / "t.zarr")


def test_a_session_name_too_long_for_the_file_system_is_refused(tmp_path):
    with pytest.raises(DiscoveryError, match=r"too long \(300 bytes; at most 200"):
        session_store(tmp_path, "s" * 300)
    assert session_store(tmp_path, "s" * 200).name == "s" * 200 + ".zarr"
