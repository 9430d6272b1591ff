"""A raw file is read for its digest once per ingest; the digest is passed along."""

from __future__ import annotations

import numpy as np

from pipeline.archive.discover import SessionSource
from pipeline.archive.ingest import ingest_session
from pipeline.provenance import hashing
from pipeline.provenance.hashing import known_sha256, tree_sha256
from pipeline.store.attrs import store_attrs


def _count_reads(monkeypatch) -> list:
    """The files ``tree_sha256`` reads (the real reads still happen)."""
    reads: list = []
    read_into = hashing._read_into

    def counted(digest, file):
        reads.append(file)
        read_into(digest, file)

    monkeypatch.setattr(hashing, "_read_into", counted)
    return reads


def test_known_sha256_is_returned_without_reading_within_and_only_for_that_path(
    tmp_path, monkeypatch
):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"abc")
    b.write_bytes(b"abc")
    reads = _count_reads(monkeypatch)
    true = tree_sha256(a)
    assert true == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    with known_sha256(a, "given"):
        assert tree_sha256(a) == "given"
        assert tree_sha256(str(tmp_path / "." / "a.bin")) == "given"  # any spelling
        assert tree_sha256(b) == true  # another file is read
    assert tree_sha256(a) == true  # outside: read again
    assert reads == [a, b, a]


def test_an_ingest_hashes_the_raw_file_once_and_records_that_digest(tmp_path, monkeypatch):
    raw = tmp_path / "walk.npz"
    rng = np.random.default_rng(1)
    np.savez(raw, position=rng.normal(size=(20, 4, 3)), keypoints=np.array(list("abcd")), fps=50.0)
    reads = _count_reads(monkeypatch)
    out = tmp_path / "walk.zarr"
    report = ingest_session(SessionSource("walk", str(raw)), out, chunk_frames=8)
    assert not report.skipped and report.n_frames == 20
    assert reads == [raw]
    monkeypatch.undo()
    assert store_attrs(out)["source_sha256"] == tree_sha256(raw)
