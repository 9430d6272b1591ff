"""The small summary of an archive run: sessions, speed, worst RMS, solver stop reasons.

Sessions fitted / skipped / failed, fitted frames per second, the worst sessions by RMS and
the frames per solver ``stop_reason``. Built from one :class:`SessionOutcome` per session;
rendered as a dict (the flow's return value) and as a markdown table (the Prefect
artifact, the CLI's closing lines).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import zarr

from pipeline.fit import FitReport
from pipeline.solve.rules import STOP_MEANINGS, STOP_REASONS, observed_only
from pipeline.store.attrs import residual_unit, store_attrs

__all__ = ["ArchiveSummary", "SessionOutcome", "fit_outcome", "session_rms", "stop_reason_counts"]

Status = Literal["fitted", "skipped", "failed"]


@dataclass(frozen=True)
class SessionOutcome:
    """What happened to one session in an archive run.

    Attributes
    ----------
    session : str
    status : {"fitted", "skipped", "failed"}
        ``skipped``: its fit was current (fingerprint match).
    frames, individuals : int
        Size of the session (0 if it failed before that was known).
    seconds : float
        Wall time of its fit in this run.
    rms : float or None
        Median per-frame RMS keypoint error over frames and individuals (in ``unit``).
    fit : str or None
        Its fit store.
    stage : str or None
        Where it failed: ``discover``, ``ingest`` or ``fit``.
    error : str or None
        The failure, one line.
    unit : str or None
        Unit of ``rms``: the fit store's ``residual_unit`` (pixels for a fit that compares
        pixels, else its length unit).
    stop_reasons : dict or None
        Frame-individuals per ``stop_reason`` name (:func:`stop_reason_counts`); None for
        a fit store from before ``stop_reason`` (schema 1) or a failed session.
    """

    session: str
    status: Status
    frames: int = 0
    individuals: int = 0
    seconds: float = 0.0
    rms: float | None = None
    fit: str | None = None
    stage: str | None = None
    error: str | None = None
    unit: str | None = None
    stop_reasons: dict[str, int] | None = None
    solve_seconds: float | None = None

    @classmethod
    def failure(cls, session: str, stage: str, exc: BaseException) -> SessionOutcome:
        """A failed session; the error as one line (``Type: message``)."""
        text = " ".join(str(exc).split()) or repr(exc)
        return cls(session, "failed", stage=stage, error=f"{type(exc).__name__}: {text}")


def session_rms(fit: str | Path) -> float | None:
    """Median ``rms_error`` of a fit store over frames and individuals (None if all NaN).

    Reads the one array with zarr: opening the store with xarray would decode every
    coordinate first, most of the cost for a skipped session.
    """
    group = zarr.open_group(str(fit), mode="r")
    codes = group["stop_reason"][...] if "stop_reason" in group.array_keys() else None
    rms = observed_only(group["rms_error"][...], codes)  # no RMS over nothing observed
    finite = rms[np.isfinite(rms)]
    return float(np.median(finite)) if finite.size else None


def stop_reason_counts(fit: str | Path) -> dict[str, int] | None:
    """Frame-individuals of a fit store per ``stop_reason`` (None before schema 2).

    Keys are :data:`pipeline.solve.rules.STOP_REASONS`, in code order, all present.
    """
    group = zarr.open_group(str(fit), mode="r")
    if "stop_reason" not in group.array_keys():
        return None
    codes = np.asarray(group["stop_reason"][...]).ravel()
    counts = np.bincount(codes[codes >= 0].astype(np.intp), minlength=len(STOP_REASONS))
    return {name: int(n) for name, n in zip(STOP_REASONS, counts, strict=False)}


def fit_outcome(session: str, report: FitReport) -> SessionOutcome:
    """The outcome of :func:`pipeline.fit.fit_session` for the summary (reads the RMS)."""
    attrs = store_attrs(report.out)
    timings = attrs.get("timings") or {}
    return SessionOutcome(
        session,
        "skipped" if report.skipped else "fitted",
        frames=report.n_frames,
        individuals=report.n_individuals,
        seconds=report.seconds,
        rms=session_rms(report.out),
        fit=str(report.out),
        unit=residual_unit(attrs) if attrs.get("residual_unit") or attrs.get("unit") else None,
        stop_reasons=stop_reason_counts(report.out),
        solve_seconds=None if report.skipped else timings.get("solve_s"),
    )


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class ArchiveSummary:
    """Outcome of an archive run.

    Attributes
    ----------
    sessions : tuple of SessionOutcome
        One per discovered session (plus ``*`` for a failure before discovery).
    fit_seconds : float
        Wall time of the fitting stage (sessions run concurrently).
    seconds : float
        Wall time of the whole run.
    unit : str or None
        Unit of the RMS values (the sessions' ``residual_unit``).
    report : str or None
        The HTML report written by the run.
    """

    sessions: tuple[SessionOutcome, ...]
    fit_seconds: float = 0.0
    seconds: float = 0.0
    unit: str | None = None
    report: str | None = None

    def _count(self, status: Status) -> int:
        return sum(s.status == status for s in self.sessions)

    @property
    def fitted(self) -> int:
        """Sessions fitted in this run."""
        return self._count("fitted")

    @property
    def skipped(self) -> int:
        """Sessions whose fit was already current."""
        return self._count("skipped")

    @property
    def failed(self) -> int:
        """Sessions that failed (at ingest or fit)."""
        return self._count("failed")

    @property
    def frames(self) -> int:
        """Frames fitted in this run (time frames, summed over fitted sessions)."""
        return sum(s.frames for s in self.sessions if s.status == "fitted")

    @property
    def frames_per_s(self) -> float | None:
        """Fitted frames per second of the fitting stage's wall time."""
        return self.frames / self.fit_seconds if self.frames and self.fit_seconds > 0 else None

    @property
    def solver_frames_per_s(self) -> float | None:
        """Frame-individuals per second of solver time (one core), over the fitted sessions.

        The solver's own speed: without cluster start-up, reading, writing and scheduling,
        which :attr:`frames_per_s` includes.
        """
        fitted = [s for s in self.sessions if s.status == "fitted" and s.solve_seconds]
        seconds = sum(s.solve_seconds or 0.0 for s in fitted)
        work = sum(s.frames * max(s.individuals, 1) for s in fitted)
        return work / seconds if work and seconds > 0 else None

    @property
    def stop_reasons(self) -> dict[str, int]:
        """Frame-individuals per ``stop_reason`` over the current fits that report them."""
        total = dict.fromkeys(STOP_REASONS, 0)
        for s in self.sessions:
            for name, n in (s.stop_reasons or {}).items():
                total[name] = total.get(name, 0) + n
        return total

    def worst(self, n: int = 5) -> list[SessionOutcome]:
        """The ``n`` current fits with the largest median RMS error."""
        scored = [s for s in self.sessions if s.rms is not None and s.status != "failed"]
        return sorted(scored, key=lambda s: s.rms or 0.0, reverse=True)[:n]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON summary (counts, frames, speed, worst sessions, failures)."""
        return {
            "sessions": len(self.sessions),
            "fitted": self.fitted,
            "skipped": self.skipped,
            "failed": self.failed,
            "frames": self.frames,
            "frames_per_s": self.frames_per_s,
            "solver_frames_per_s": self.solver_frames_per_s,
            "stop_reasons": self.stop_reasons,
            "seconds": self.seconds,
            "unit": self.unit,
            "report": self.report,
            "worst": [asdict(s) for s in self.worst()],
            "failures": [asdict(s) for s in self.sessions if s.status == "failed"],
        }

    def to_markdown(self) -> str:
        """Markdown tables: totals, worst sessions by RMS, failures, and the report link."""
        speed = f"{self.frames_per_s:,.0f}" if self.frames_per_s else "-"
        solver = f"{self.solver_frames_per_s:,.0f}" if self.solver_frames_per_s else "-"
        unit = f" ({self.unit})" if self.unit else ""
        lines = [
            "## kinefit archive run",
            "",
            "| sessions | fitted | skipped | failed | frames fitted | frames/s (wall) "
            "| solver frames/s per core | wall (s) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {len(self.sessions)} | {self.fitted} | {self.skipped} | {self.failed} "
            f"| {self.frames:,} | {speed} | {solver} | {self.seconds:.1f} |",
        ]
        reasons = self.stop_reasons
        if any(reasons.values()):
            lines += ["", "Frames by stop reason (what it means for the pose):", ""]
            lines += [
                f"- {name}: {n:,} ({STOP_MEANINGS[name]})" for name, n in reasons.items() if n
            ]
        worst = self.worst()
        if worst:
            lines += [
                "",
                f"### Worst sessions by median RMS{unit}",
                "",
                "| session | status | median RMS | frames | individuals |",
                "|---|---|---:|---:|---:|",
            ]
            lines += [
                f"| {_cell(s.session)} | {s.status} | {s.rms:.4g} | {s.frames} | {s.individuals} |"
                for s in worst
            ]
        failures = [s for s in self.sessions if s.status == "failed"]
        if failures:
            lines += ["", "### Failed sessions", "", "| session | stage | error |", "|---|---|---|"]
            lines += [f"| {_cell(s.session)} | {s.stage} | {_cell(s.error)} |" for s in failures]
        if self.report:
            uri = Path(self.report).resolve().as_uri()
            lines += ["", f"HTML report: [{Path(self.report).name}]({uri}) (`{self.report}`)"]
        return "\n".join(lines) + "\n"
