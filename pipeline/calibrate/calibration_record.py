"""The outcome of a calibration: the calibrated plan and what it was made from.

The calibrated plan is a normal version-2 body plan (the template with scaled segments
and fitted marker offsets) whose top-level ``x-calibration`` records everything else
(:meth:`Calibration.record`), so the one JSON file loads anywhere as a plan and still says
where it came from. The record's layout::

    {"format": "kinefit-calibration/1", "identity": ..., "fingerprint": ...,
     "template_sha256": ..., "kinefit_version": ..., "created": ISO time,
     "settings": {...}, "method": "schur", "iterations": 8, "converged": true,
     "sessions": [{"name": ..., "individual": ..., "frames": [..]}, ...],
     "rms_before": 0.042, "rms_after": 0.0048,         # mean keypoint RMS, plan units
     "global_scale": {"value": 1.08, "std": 0.0003},
     "segments": [{"joint", "group", "template_length", "template_offset", "length",
                   "scale", "scale_std", "observed"}, ...],
     "markers": [{"joint", "offset", "template_offset", "std"}, ...],
     "session_scales": {"<session>": 1.002, ...}}

The template's offsets (``template_offset`` of segments and markers) are kept at full
float64 precision (:func:`exact_floats`), so the template can be rebuilt from the
calibrated plan and the record bit for bit and checked against ``template_sha256``; the
fitted numbers are rounded to 12 significant digits (:func:`as_floats`). Records written
before segments had a ``template_offset`` (and with rounded marker ones) still load.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.io import body_plan_sha256, body_plan_to_dict, load_body_plan
from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import CalibrationError
from pipeline.store.atomic import write_text_atomic

__all__ = ["FORMAT", "Calibration", "load_calibration", "write_json_atomic"]

#: Value of the record's ``format`` key.
FORMAT = "kinefit-calibration/1"


@dataclass(frozen=True)
class Calibration:
    """A calibrated body and its provenance.

    Attributes
    ----------
    plan : BodyPlan
        The calibrated plan; ``plan.extras["x-calibration"]`` is :attr:`record`.
    record : dict
        Plain JSON (layout in the module docstring).
    """

    plan: BodyPlan
    record: Mapping[str, Any] = field(repr=False)

    @property
    def rms_before(self) -> float:
        """Mean keypoint RMS of the calibration frames with the template (plan units)."""
        return float(self.record["rms_before"])

    @property
    def rms_after(self) -> float:
        """The same with the calibrated plan."""
        return float(self.record["rms_after"])

    @property
    def fingerprint(self) -> str:
        """Hash of the template, the settings and the identity (see ``identity.py``)."""
        return str(self.record.get("fingerprint", ""))

    @property
    def global_scale(self) -> float:
        """The fitted overall scale (1 when it was not fitted)."""
        return float(self.record["global_scale"]["value"])

    def segment_scales(self) -> dict[str, float]:
        """``{joint: length / template length}`` for every segment."""
        return {s["joint"]: float(s["scale"]) for s in self.record["segments"]}

    def with_record(self, **changes: Any) -> Calibration:
        """The same calibration with record entries changed (plan extras follow)."""
        record = {**self.record, **changes}
        extras = {**(self.plan.extras or {}), "x-calibration": record}
        return Calibration(replace(self.plan, extras=extras), record)

    def to_dict(self) -> dict[str, Any]:
        """The calibrated plan's JSON object (with its ``x-calibration``)."""
        return body_plan_to_dict(self.plan)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the calibrated plan atomically (a temporary file, then a rename)."""
        return write_json_atomic(path, self.to_dict())


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as JSON to ``path``: all of it or, on failure, nothing."""
    return write_text_atomic(path, json.dumps(data, indent=1, allow_nan=False))


def load_calibration(path: str | os.PathLike[str]) -> Calibration:
    """Read a calibrated plan written by :meth:`Calibration.save`.

    Raises
    ------
    CalibrationError
        The file is a body plan without an ``x-calibration`` record of this format.
    """
    plan = load_body_plan(path)
    record = (plan.extras or {}).get("x-calibration")
    if not isinstance(record, Mapping) or record.get("format") != FORMAT:
        raise CalibrationError(
            f"{path}: not a kinefit calibration (a body plan whose 'x-calibration' has "
            f"format {FORMAT!r}); write one with 'kinefit calibrate'"
        )
    return Calibration(plan, dict(record))


def calibrated_plan(
    path: str | os.PathLike[str],
    template: BodyPlan | None = None,
    template_name: str = "the template",
) -> BodyPlan:
    """The calibrated plan in ``path``, checked against the ``template`` it should come from.

    Parameters
    ----------
    path : str or PathLike
        A calibration written by :meth:`Calibration.save`.
    template : BodyPlan, optional
        The template the caller means; none: not checked.
    template_name : str
        How the caller names the template in messages (a file, an option).

    Returns
    -------
    BodyPlan

    Raises
    ------
    CalibrationError
        Not a calibration, or calibrated from another template (its sha256 differs).
    """
    cal = load_calibration(path)
    if template is None:
        return cal.plan
    recorded, given = str(cal.record.get("template_sha256")), body_plan_sha256(template)
    if given != recorded:
        raise CalibrationError(
            f"{path}: was calibrated from another template than {template_name} "
            f"(template sha256 {recorded[:12]} vs {given[:12]}); recalibrate from it, or "
            "fit the calibrated plan without a template"
        )
    return cal.plan


def summary_rows(calibration: Calibration) -> list[tuple[str, float, float]]:
    """``(segment joint, scale, scale_std)`` rows, for tables and plots."""
    return [
        (s["joint"], float(s["scale"]), float(s["scale_std"]))
        for s in calibration.record["segments"]
    ]


def as_floats(values: np.ndarray) -> list[float]:
    """A JSON-safe list of floats (rounded to 12 significant digits)."""
    return [float(f"{v:.12g}") for v in np.asarray(values, dtype=float).ravel()]


def exact_floats(values: np.ndarray) -> list[float]:
    """A list of floats at full float64 precision (JSON writes them back exactly)."""
    return [float(v) for v in np.asarray(values, dtype=float).ravel()]
