"""Deleting a store that writers still add to, and a failed write's own error."""

from __future__ import annotations

import threading

import pytest

from pipeline.store import atomic
from pipeline.store.atomic import building, remove_store


def _late_writer(store, stop: threading.Event, writing: threading.Event) -> None:
    """Chunk writes of a failed compute still landing: files under ``c/``, folders remade."""
    n = 0
    while not stop.is_set():
        chunk = store / "position" / "c" / str(n % 7) / str(n)
        try:
            chunk.parent.mkdir(parents=True, exist_ok=True)  # as zarr's LocalStore.set does
            chunk.write_bytes(b"x" * 64)
        except OSError:
            pass
        n += 1
        if n == 500:  # enough files that no rmtree can finish between two writes
            writing.set()


def _start_writer(store):
    """A writer thread already busy in ``store`` (on a loaded machine a thread can start late)."""
    stop, writing = threading.Event(), threading.Event()
    writer = threading.Thread(target=_late_writer, args=(store, stop, writing))
    writer.start()
    assert writing.wait(10), "the writer thread never wrote"
    return writer, stop


def test_a_store_that_fills_while_it_is_deleted_is_gone_afterwards(tmp_path):
    store = tmp_path / ".s.zarr.tmp"
    (store / "position" / "c").mkdir(parents=True)
    writer, stop = _start_writer(store)
    try:
        threading.Timer(0.1, stop.set).start()  # the writes stop within the retries
        remove_store(store)
    finally:
        stop.set()
        writer.join()
    assert not store.exists()


def test_the_writes_own_error_is_raised_when_the_cleanup_fails_too(tmp_path, monkeypatch):
    def cannot(path):
        raise OSError(39, "Directory not empty", "c")

    monkeypatch.setattr("pipeline.store.atomic.remove_store", cannot)
    with (
        pytest.raises(OSError, match="disk vanished") as raised,
        building(tmp_path / "s.zarr") as tmp,
    ):
        tmp.mkdir()
        raise OSError("disk vanished while reading the source")
    assert any("could not be removed" in note for note in raised.value.__notes__)
    assert not (tmp_path / "s.zarr").exists()


def test_a_store_that_never_stops_filling_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic, "REMOVE_ATTEMPTS", 3)  # 0.35 s of retries, not 3.15
    store = tmp_path / ".s.zarr.tmp"
    (store / "position" / "c").mkdir(parents=True)
    writer, stop = _start_writer(store)
    try:
        with pytest.raises(OSError, match=r"still being written after 0.35 s: .*\.s\.zarr\.tmp"):
            remove_store(store)
    finally:
        stop.set()
        writer.join()
