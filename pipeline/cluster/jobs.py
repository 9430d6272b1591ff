"""Asking the batch scheduler about kinefit's jobs: state, reason, exit code, log; cancel.

SLURM: ``squeue`` for queued and running jobs, ``scontrol show job`` for jobs that ended
(kept by slurmctld for ``MinJobAge``, 300 s by default), ``sacct`` when accounting is on.
PBS: ``qstat -x -f``. Every command has a timeout and a failure is an ``UNKNOWN`` state,
never an exception: these calls only explain and clean up.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: SLURM states (``squeue %t``) of a job that is queued or running.
SLURM_ACTIVE = frozenset({"PD", "R", "CF", "RQ", "RF", "RH", "RS", "S", "SI", "SO", "ST"})
#: PBS states of a job that is queued or running.
PBS_ACTIVE = frozenset({"Q", "R", "H", "W", "T", "B", "S", "E", "M"})
_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class JobState:
    """What the scheduler says about one job.

    Attributes
    ----------
    job_id : str
    state : str
        ``PD``/``R`` (queued, running; SLURM's short codes), a final state (``FAILED``,
        ``TIMEOUT``, ``COMPLETED``, ``CANCELLED``...) or ``UNKNOWN``.
    reason : str
        The scheduler's reason (``PartitionConfig``, ``Resources``, ``NonZeroExitCode``).
    exit_code : str
        Exit status of the job script once it ended (``127``), else ``""``.
    logs : tuple of str
        Paths of the job's stderr and stdout files.
    """

    job_id: str
    state: str = "UNKNOWN"
    reason: str = ""
    exit_code: str = ""
    logs: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        """Queued or running (or unknown: not known to have ended)."""
        return self.state == "UNKNOWN" or self.state in SLURM_ACTIVE | PBS_ACTIVE

    def describe(self) -> str:
        """``job 12 PD (PartitionConfig)``, ``job 14 FAILED 127 (NonZeroExitCode)``."""
        code = f" {self.exit_code}" if self.exit_code not in ("", "0") else ""
        reason = f" ({self.reason})" if self.reason and self.reason != "None" else ""
        return f"job {self.job_id} {self.state}{code}{reason}"


def _run(command: Sequence[str]) -> str | None:
    """The stdout of a scheduler command, or None if it is missing, fails or times out."""
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _fields(line: str) -> dict[str, str]:
    """``Key=Value Key2=Value2`` (``scontrol -o``) as a dict."""
    return dict(re.findall(r"(\w+)=(\S*)", line))


def _expand(path: str, job_id: str) -> str:
    """A SLURM log path with the job id patterns (``%j``, ``%J``) filled in."""
    return path.replace("%J", job_id).replace("%j", job_id)


def _slurm_ended(job_id: str) -> JobState:
    out = _run(["scontrol", "-o", "show", "job", job_id])
    if out and out.strip():
        f = _fields(out)
        paths = (f.get("StdErr"), f.get("StdOut"))
        logs = tuple(dict.fromkeys(_expand(p, job_id) for p in paths if p))
        return JobState(
            job_id,
            f.get("JobState", "UNKNOWN"),
            f.get("Reason", ""),
            f.get("ExitCode", "").split(":")[0],
            logs,
        )
    out = _run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State,ExitCode,Reason"])
    if out and out.strip():
        state, code, reason = (out.strip().splitlines()[0].split("|") + ["", "", ""])[:3]
        return JobState(job_id, state.split()[0], reason, code.split(":")[0])
    return JobState(job_id)


def slurm_states(job_ids: Iterable[str]) -> dict[str, JobState]:
    """The state of each SLURM job (queued/running from squeue, ended from scontrol)."""
    ids = [str(i) for i in job_ids]
    if not ids:
        return {}
    out = _run(["squeue", "--me", "-h", "-o", "%i|%t|%r"])
    if out is None:  # no controller to ask
        return {i: JobState(i) for i in ids}
    states: dict[str, JobState] = {}
    for line in out.splitlines():
        job_id, state, reason = (line.strip().split("|") + ["", ""])[:3]
        if job_id in ids and state in SLURM_ACTIVE:
            states[job_id] = JobState(job_id, state, reason)
    for job_id in ids:
        if job_id not in states:
            states[job_id] = _slurm_ended(job_id)
    return states


def pbs_states(job_ids: Iterable[str]) -> dict[str, JobState]:
    """The state of each PBS job (``qstat -x -f``; untested against a live PBS here)."""
    states = {}
    for job_id in map(str, job_ids):
        out = _run(["qstat", "-x", "-f", job_id])
        if not out:
            states[job_id] = JobState(job_id)
            continue
        f = dict(re.findall(r"^\s*(\w+) = (.*)$", out, flags=re.MULTILINE))
        state = f.get("job_state", "UNKNOWN")
        state = "FINISHED" if state == "F" else state
        logs = tuple(p.split(":", 1)[-1] for p in (f.get("Error_Path"), f.get("Output_Path")) if p)
        states[job_id] = JobState(
            job_id, state, f.get("comment", ""), f.get("Exit_status", ""), logs
        )
    return states


def job_states(kind: str, job_ids: Iterable[str]) -> dict[str, JobState]:
    """:func:`slurm_states` or :func:`pbs_states` by ``kind`` (``slurm``/``pbs``)."""
    return slurm_states(job_ids) if kind == "slurm" else pbs_states(job_ids)


def log_tail(state: JobState, lines: int = 3) -> str:
    """The last non-empty lines of the job's logs (stderr first), one line."""
    for path in state.logs:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        if tail:
            return f"{path}: " + " | ".join(tail)
    return ""


def cancel_jobs(kind: str, job_ids: Iterable[str]) -> bool:
    """``scancel`` / ``qdel`` the jobs by id (queued ones too); True if the command ran."""
    ids = sorted({str(i) for i in job_ids})
    if not ids:
        return True
    command = ["scancel", *ids] if kind == "slurm" else ["qdel", "-W", "force", *ids]
    try:
        subprocess.run(command, capture_output=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return True
