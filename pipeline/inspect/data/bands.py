"""Uncertainty bands of angle panels: the axis the trajectories set, and bands clipped to it.

Shared by the report's figures (:mod:`pipeline.inspect.plots.angle_trajectories`) and the viewer
(:mod:`pipeline.inspect.viewer.angle_panel`): a near-singular DOF can report a standard
deviation of hundreds of degrees, which must not flatten its trajectory, so a panel's
y-axis follows the trajectories and a band reaching past it is clipped (and marked by the
caller).
"""

from __future__ import annotations

import numpy as np

__all__ = ["AXIS_MARGIN", "BAND_FLOOR_DEG", "BAND_REACH", "band_axis", "clip_band"]

#: How far (in ranges of the panel's trajectories) a band may widen the axis beyond them.
BAND_REACH = 1.0
#: The smallest trajectory range counted for :data:`BAND_REACH` in degrees: a nearly
#: still angle keeps a few degrees of band in view.
BAND_FLOOR_DEG = 10.0
#: Margin around the axis's content, a fraction of its extent (matplotlib's default).
AXIS_MARGIN = 0.05


def band_axis(
    values: list[np.ndarray],
    stds: list[np.ndarray | None] = (),
    bounds: list[float] = (),
    floor: float = 0.0,
    margin: float = AXIS_MARGIN,
) -> tuple[float, float] | None:
    """The y-axis extent of a panel: set by its trajectories, not by their bands.

    Parameters
    ----------
    values : list of arrays
        The panel's trajectories (display units; NaN skipped).
    stds : list of arrays or None
        Their standard deviations, same shapes (None or NaN: no band).
    bounds : list of float
        Joint limits drawn in the panel; kept in view when within the band reach (a limit
        the trajectories come near), else left off the axis like a far band.
    floor : float
        Smallest trajectory range counted for the band reach (:data:`BAND_FLOOR_DEG` for
        angles).
    margin : float
        Padding, a fraction of the extent, either side.

    Returns
    -------
    (float, float) or None
        From the trajectories' minimum to maximum, widened by each band as far as
        :data:`BAND_REACH` times their range (at least ``floor``) and by the limits that
        near, then padded by ``margin``; a band reaching further is clipped (:func:`clip_band`).
        None when no trajectory has a finite value.
    """
    ys = [np.asarray(v, dtype=float) for v in values]
    finite = np.concatenate([y[np.isfinite(y)].ravel() for y in ys]) if ys else np.empty(0)
    if not finite.size:
        return None
    low, high = float(finite.min()), float(finite.max())
    reach = BAND_REACH * max(high - low, floor)
    if reach <= 0:
        reach = 0.1 * max(abs(low), abs(high)) or 1.0
    top, bottom = high, low
    for y, sd in zip(ys, stds, strict=False):
        if sd is None:
            continue
        with np.errstate(invalid="ignore"):
            up, down = y + np.asarray(sd, dtype=float), y - np.asarray(sd, dtype=float)
        if np.isfinite(up).any():
            top = max(top, min(float(np.nanmax(up)), high + reach))
            bottom = min(bottom, max(float(np.nanmin(down)), low - reach))
    near = [float(b) for b in bounds if low - reach <= b <= high + reach]
    top, bottom = max([top, *near]), min([bottom, *near])
    pad = margin * (top - bottom) or 0.05 * reach
    return bottom - pad, top + pad


def clip_band(
    y: np.ndarray, sd: np.ndarray, low: float, high: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A +-1 SD band clipped to an axis, and where it was.

    Parameters
    ----------
    y, sd : arrays
        A trajectory and its standard deviation (NaN: no band there).
    low, high : float
        The axis extent (:func:`band_axis`).

    Returns
    -------
    lower, upper : arrays
        ``y -+ sd`` clipped to ``[low, high]`` (NaN kept).
    below, above : bool arrays
        Where the band reached past ``low`` / ``high``.
    """
    y, sd = np.asarray(y, dtype=float), np.asarray(sd, dtype=float)
    with np.errstate(invalid="ignore"):
        lower, upper = y - sd, y + sd
        below, above = lower < low, upper > high
    return np.clip(lower, low, high), np.clip(upper, low, high), below, above
