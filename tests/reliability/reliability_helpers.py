"""Shared helpers of the reliability suite: directory snapshots, processes, real mounts.

Every process a test starts is stopped by its own PID (:func:`stop`), never by name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The ``kinefit`` console script beside this interpreter (else its app, ``-m flows.cli``).
_SCRIPT = Path(sys.executable).with_name("kinefit")
KINEFIT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "flows.cli"]
#: Worker processes: one BLAS thread, as pipeline.cluster pins them.
QUIET_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT),
}


def snapshot(folder: Path, digest: bool = False) -> dict[str, tuple]:
    """Every entry below ``folder``: inode, size, mtime and ctime (ns), optionally sha256.

    Any write to a file or directory moves its ctime, which no tool can set back, so the
    stat fields catch every change; ``digest`` adds the content hash of files.
    """
    out: dict[str, tuple] = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        entry = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if digest and path.is_file() and not path.is_symlink():
            entry += (hashlib.sha256(path.read_bytes()).hexdigest(),)
        out[str(path.relative_to(folder))] = entry
    return out


def assert_unchanged(before: dict, folder: Path) -> None:
    """Nothing below ``folder`` was created, removed or modified since ``before``."""
    after = snapshot(folder, digest=any(len(v) > 5 for v in before.values()))
    created = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    assert not (created or removed or changed), (
        f"created {created[:5]}, removed {removed[:5]}, changed {changed[:5]}"
    )


def env(**extra: str) -> dict[str, str]:
    """This process's environment plus :data:`QUIET_ENV` and ``extra``."""
    return {**os.environ, **QUIET_ENV, **extra}


def start(args: list[str], log: Path, **extra_env: str) -> subprocess.Popen:
    """Start a process with stdout+stderr to ``log``, in its own session."""
    handle = open(log, "wb")  # noqa: SIM115 - closed with the process by stop()
    proc = subprocess.Popen(
        args,
        stdout=handle,
        stderr=subprocess.STDOUT,
        env=env(**extra_env),
        cwd=ROOT,
        start_new_session=True,
    )
    proc._log_handle = handle  # type: ignore[attr-defined]
    return proc


def stop(proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """Stop one process by its PID: SIGTERM, then SIGKILL; reap it; close its log."""
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout)
    handle = getattr(proc, "_log_handle", None)
    if handle is not None:
        handle.close()


def wait_for(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.02) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


def done_count(partial: Path) -> int:
    """Chunks marked done in a partial fit store (0 while it is being created)."""
    from pipeline.store.fit_chunks import done_chunks

    try:
        return int(done_chunks(partial).sum())
    except Exception:  # noqa: BLE001 - the store may not exist or be half-created yet
        return 0


@contextlib.contextmanager
def dask_cluster(folder: Path, n_workers: int = 2, **worker_env: str) -> Iterator[tuple[str, list]]:
    """A real ``dask scheduler`` and ``n_workers`` ``dask worker`` processes on 127.0.0.1.

    Workers run without a nanny, so each worker's PID is the worker itself. Yields the
    scheduler file and the worker processes; stops every process by its PID.
    """
    dask = str(Path(sys.executable).with_name("dask"))
    folder.mkdir(parents=True, exist_ok=True)
    sched_file = folder / "scheduler.json"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(
            start(
                [
                    dask,
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(sched_file),
                ],
                folder / "scheduler.log",
            )
        )
        wait_for(sched_file.exists, 60, "the scheduler file")
        workers = []
        for i in range(n_workers):
            workers.append(
                start(
                    [
                        dask,
                        "worker",
                        "--scheduler-file",
                        str(sched_file),
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                        "--name",
                        f"w{i}",
                        "--memory-limit",
                        "0",
                    ],
                    folder / f"worker{i}.log",
                    **worker_env,
                )
            )
        procs.extend(workers)
        yield str(sched_file), workers
    finally:
        for proc in reversed(procs):
            stop(proc)


def scheduler_address(sched_file: str) -> str:
    return json.loads(Path(sched_file).read_text())["address"]


@contextlib.contextmanager
def tmpfs(folder: Path, size: str, read_only: bool = False) -> Iterator[Path | None]:
    """Mount a small tmpfs on ``folder`` (needs root); yields None if mounting is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if read_only else "")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        yield None
        return
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def remount(folder: Path, read_only: bool) -> None:
    """Remount the tmpfs at ``folder`` read-only or read-write."""
    subprocess.run(
        ["mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(folder)], check=True
    )
