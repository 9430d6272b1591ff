"""One angle panel's data, shared by the static angle plots and the viewer's angle panel.

A panel shows one joint's angles over time. :func:`panel_data` bins a fit's angle
trajectories, their standard deviations and the at-limit flags once, in display units;
:meth:`PanelData.axis` gives a panel's y-range (set by its trajectories, not by their
bands: :func:`~pipeline.inspect.data.bands.band_axis`). The frames without keypoint
evidence become shaded spans (:func:`panel_gaps`, :func:`gap_spans`), and an angle never
observed is named so in the legend (:func:`never_note`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pipeline.inspect.data.angle_sets import AngleSet, gap_runs
from pipeline.inspect.data.bands import BAND_FLOOR_DEG, band_axis
from pipeline.inspect.data.display import bin_time

__all__ = [
    "CLIP_LABEL",
    "GAP_LABEL",
    "MAX_GAP_SPANS",
    "PanelData",
    "gap_spans",
    "never_note",
    "panel_data",
    "panel_gaps",
]

#: Legend entry of the shaded gaps.
GAP_LABEL = "no keypoint evidence (gap)"
#: Most shaded gap spans per panel; more runs are coarsened (a span covers each block of
#: frames holding a gap frame).
MAX_GAP_SPANS = 200
#: Legend entry of the markers where a +-1 SD band runs past the axis.
CLIP_LABEL = "±1 SD clipped at the axis"


@dataclass(frozen=True)
class PanelData:
    """Binned angle trajectories of the individuals shown, in display units.

    Attributes
    ----------
    t : (B,) float array
        Each time bin's first time (the fit's time units).
    factor : int
        Frames per bin (1: not binned).
    lines : dict
        Individual -> ``(B, A)`` angles (bin means; degrees, or the DOF's unit).
    stds : dict
        Individual -> ``(B, A)`` standard deviations (bin maxima); only with a std variable.
    active : dict
        Individual -> ``(B, A)`` bool, held at a limit in the bin; only for DOF values
        with ``limit_active``.
    """

    t: np.ndarray
    factor: int
    lines: dict[str, np.ndarray]
    stds: dict[str, np.ndarray]
    active: dict[str, np.ndarray]

    def axis(self, angles: AngleSet, members: list[int]) -> tuple[float, float] | None:
        """The y-range of a panel of ``members`` (indices into ``angles.names``).

        The individuals' trajectories, their bands and the angles' limits they come
        near set it (:func:`~pipeline.inspect.data.bands.band_axis`, with a floor of
        ``BAND_FLOOR_DEG`` when every angle is in degrees); None without a finite value.
        """
        pairs = [(a, ind) for a in members for ind in self.lines]
        return band_axis(
            [self.lines[ind][:, a] for a, ind in pairs],
            [self.stds[ind][:, a] if ind in self.stds else None for a, ind in pairs],
            [b for a in members for b in angles.limits.get(angles.names[a], ())],
            floor=BAND_FLOOR_DEG if all(angles.units[a] == "deg" for a in members) else 0.0,
        )


def panel_data(ds: xr.Dataset, angles: AngleSet, individuals: list[str]) -> PanelData:
    """Bin the angle panels' trajectories, bands and at-limit flags of ``individuals``.

    Parameters
    ----------
    ds : xarray.Dataset
        The fit: ``angles.variable (time, individual, <angle dim>)``, and
        ``angles.std_variable`` and ``limit_active (time, individual, dof)`` when present.
    angles : AngleSet
        What the angles are (``angles.scale`` converts them to display units).
    individuals : list of str

    Returns
    -------
    PanelData
        Binned to at most :data:`~pipeline.inspect.data.display.MAX_TIME_POINTS` times.
    """
    t, factor = bin_time(ds["time"], "min")
    lines, stds, active = {}, {}, {}
    for ind in individuals:
        da = ds[angles.variable].sel(individual=ind).transpose("time", angles.dim)
        lines[ind] = np.asarray(bin_time(da, "mean")[0].values, float) * angles.scale
        if angles.std_variable:
            sd = ds[angles.std_variable].sel(individual=ind).transpose("time", angles.dim)
            stds[ind] = np.asarray(bin_time(sd, "max")[0].values, float) * angles.scale
        if angles.variable == "dof_value" and "limit_active" in ds.data_vars:
            la = ds["limit_active"].sel(individual=ind).transpose("time", "dof").astype(float)
            active[ind] = np.asarray(bin_time(la, "max")[0].values) > 0
    return PanelData(np.asarray(t.values, dtype=float), factor, lines, stds, active)


def never_note(never: dict[int, list[str]], angle: int, individuals: list[str]) -> str:
    """Label suffix of an angle without keypoint evidence in any frame (else ``""``).

    Parameters
    ----------
    never : dict
        Angle index -> individuals (:func:`panel_gaps`).
    angle : int
    individuals : list of str
        Every individual drawn (all of them never observed: no names).

    Returns
    -------
    str
        ``" (never observed)"``, or ``" (never observed: individual_1)"`` for some only.
    """
    names = never.get(angle, [])
    if not names:
        return ""
    return (
        " (never observed)"
        if len(names) == len(individuals)
        else (f" (never observed: {', '.join(names)})")
    )


def gap_spans(
    t: np.ndarray, mask: np.ndarray, max_spans: int = MAX_GAP_SPANS
) -> list[tuple[float, float]]:
    """The time spans to shade for the gap frames of ``mask``.

    Parameters
    ----------
    t : (T,) array
        Frame times.
    mask : (T,) bool array
    max_spans : int
        More runs than this are coarsened: blocks of frames, each shaded whole when it
        holds a gap frame.

    Returns
    -------
    list of (float, float)
        Each run from half a frame before its first frame to half a frame after its
        last (clipped to ``t``'s range, so a one-frame gap has a width).
    """
    t = np.asarray(t, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    runs = gap_runs(mask)
    if len(runs) > max_spans:
        factor = math.ceil(len(mask) / (2 * max_spans))
        padded = np.r_[mask, np.zeros(-len(mask) % factor, bool)]
        coarse = gap_runs(padded.reshape(-1, factor).any(axis=1))
        runs = [(a * factor, min(b * factor, len(mask))) for a, b in coarse]
    if not runs:
        return []
    edges = np.r_[t[0], (t[1:] + t[:-1]) / 2, t[-1]]
    return [(float(edges[a]), float(edges[b])) for a, b in runs]


def panel_gaps(
    gaps: dict[str, np.ndarray | None], members: list[int]
) -> tuple[np.ndarray | None, dict[int, list[str]]]:
    """The frames to shade in a panel of angles, and its angles never observed.

    Parameters
    ----------
    gaps : dict
        Individual -> :func:`evidence_gaps` (or None).
    members : list of int
        The panel's angles.

    Returns
    -------
    shade : (T,) bool array or None
        Frames where any individual's angle of the panel is in a gap, leaving out the
        (individual, angle) pairs in a gap in every frame (their shading would cover the
        whole axis); None without evidence.
    never : dict
        Angle index -> the individuals for whom it is in a gap in every frame.
    """
    shade, never = None, {}
    for ind, mask in gaps.items():
        if mask is None:
            continue
        shade = np.zeros(len(mask), bool) if shade is None else shade
        for a in members:
            if len(mask) and mask[:, a].all():
                never.setdefault(a, []).append(ind)
            else:
                shade |= mask[:, a]
    return shade, never
