"""What a plan's version-2 ``calibration`` field declares, and side names.

The field (or the run config's replacement) says which calibration parameters exist
(:mod:`pipeline.calibrate.params` resolves them against the joints)::

    "calibration": {"global_scale": true, "segments": true, "fixed": ["head_top"],
                    "symmetry": [["upper_arm_l", "upper_arm_r"]], "markers": ["nose"],
                    "prior": {"global_scale": 0.001, "segment_scale": 1, "marker_offset": 1}}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import CalibrationError

__all__ = ["CalibrationSpec", "PriorWeights", "mirror_names"]

_SPEC_KEYS = ("global_scale", "segments", "fixed", "symmetry", "markers", "prior")
_PRIOR_KEYS = ("global_scale", "segment_scale", "marker_offset")


@dataclass(frozen=True)
class PriorWeights:
    """Weights of the prior toward the template, in keypoint observations.

    Attributes
    ----------
    global_scale : float
        On ``L**2 (g - 1)**2``, ``L`` the body size (default 1e-3: the data decide the
        overall size).
    segment_scale : float
        On ``l**2 d**2`` per segment group, ``l`` its mean template length (default 1).
    marker_offset : float
        On ``|delta|**2`` per marker (default 1).
    """

    global_scale: float = 1e-3
    segment_scale: float = 1.0
    marker_offset: float = 1.0


@dataclass(frozen=True)
class CalibrationSpec:
    """What calibration may change, as declared in a plan's ``calibration`` field.

    Attributes
    ----------
    global_scale : bool
        Fit the overall scale (default True).
    segments : bool
        Fit segment scales (default True).
    fixed : tuple of str
        Joints whose segment keeps its template proportion (only the global scale).
    symmetry : tuple of tuple of str
        Explicit groups of joints whose segments share one scale (beyond the side pairs
        derived from names).
    markers : tuple of str
        Fixed joints that are markers: their offset is fitted as a free 3-vector.
    prior : PriorWeights
    """

    global_scale: bool = True
    segments: bool = True
    fixed: tuple[str, ...] = ()
    symmetry: tuple[tuple[str, ...], ...] = ()
    markers: tuple[str, ...] = ()
    prior: PriorWeights = field(default_factory=PriorWeights)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, source: str) -> CalibrationSpec:
        """Read the ``calibration`` object of a plan or config.

        Parameters
        ----------
        data : mapping or None
            None gives the defaults (a version-1 plan).
        source : str
            Named in messages (the plan file).

        Raises
        ------
        CalibrationError
            Unknown keys or values of the wrong type, naming the field and the choices.
        """
        if data is None:
            return cls()
        where = f"{source}: calibration"
        unknown = sorted(set(data) - set(_SPEC_KEYS))
        if unknown:
            raise CalibrationError(f"{where}: unknown keys {unknown}; valid: {list(_SPEC_KEYS)}")
        prior = dict(data.get("prior") or {})
        bad = sorted(set(prior) - set(_PRIOR_KEYS))
        if bad:
            raise CalibrationError(f"{where}.prior: unknown keys {bad}; valid: {list(_PRIOR_KEYS)}")
        for key, value in prior.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise CalibrationError(f"{where}.prior.{key}: must be a number >= 0, not {value!r}")
        for key in ("global_scale", "segments"):
            if not isinstance(data.get(key, True), bool):
                raise CalibrationError(f"{where}.{key}: must be true or false")

        def names(key: str) -> tuple[str, ...]:
            value = data.get(key, [])
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise CalibrationError(f"{where}.{key}: must be a list of joint names")
            return tuple(value)

        groups = data.get("symmetry", [])
        if not isinstance(groups, list | tuple) or not all(
            isinstance(g, list | tuple) and all(isinstance(n, str) for n in g) for g in groups
        ):
            raise CalibrationError(
                f"{where}.symmetry: must be a list of lists of joint names, e.g. "
                '[["upper_arm_l", "upper_arm_r"]]'
            )
        return cls(
            global_scale=bool(data.get("global_scale", True)),
            segments=bool(data.get("segments", True)),
            fixed=names("fixed"),
            symmetry=tuple(tuple(g) for g in groups),
            markers=names("markers"),
            prior=PriorWeights(**{k: float(v) for k, v in prior.items()}),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (the plan field and the calibration's settings)."""
        return {
            "global_scale": self.global_scale,
            "segments": self.segments,
            "fixed": list(self.fixed),
            "symmetry": [list(g) for g in self.symmetry],
            "markers": list(self.markers),
            "prior": dataclasses.asdict(self.prior),
        }


def mirror_names(name: str) -> list[str]:
    """Names the other side of ``name`` could have (``knee_l`` -> ``knee_r``, ...)."""
    out = []
    for a, b in (("_l", "_r"), ("_L", "_R"), (".l", ".r"), (".L", ".R")):
        for x, y in ((a, b), (b, a)):
            if name.endswith(x):
                out.append(name[: -len(x)] + y)
    for a, b in (("left", "right"), ("Left", "Right"), ("LEFT", "RIGHT")):
        for x, y in ((a, b), (b, a)):
            if name.startswith(x):
                out.append(y + name[len(x) :])
    if len(name) > 1 and name[0] in "lrLR":
        out.append({"l": "r", "r": "l", "L": "R", "R": "L"}[name[0]] + name[1:])
    return out
