"""Each angle's distribution across sessions and individuals, side by side (violins)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from pipeline.inspect.data.angle_sets import angle_set, with_named_angles
from pipeline.inspect.data.checks import InspectError
from pipeline.inspect.data.display import color
from pipeline.inspect.plots.figures import panel_grid

__all__ = ["MAX_SAMPLES", "angle_samples", "plot_angle_distributions"]

#: Frames sampled (evenly) per session and individual.
MAX_SAMPLES = 2000
#: More groups than this are drawn as box plots (violins get too thin to read).
MAX_VIOLINS = 16


def angle_samples(
    fits: Mapping[str, xr.Dataset], max_samples: int = MAX_SAMPLES
) -> tuple[list[str], dict[str, str], dict[tuple[str, str], dict[str, np.ndarray]]]:
    """Sampled angle values of every session and individual.

    Returns
    -------
    names : list of str
        Angles in the order of the first fit (then any others').
    units : dict
        Angle -> display unit.
    samples : dict
        ``(session, individual)`` -> angle -> values (display units, finite only; at most
        ``max_samples`` frames, evenly spaced).
    """
    names: list[str] = []
    units: dict[str, str] = {}
    samples: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    for key, full in fits.items():
        step = max(1, math.ceil(full.sizes["time"] / max(int(max_samples), 1)))
        fit = with_named_angles(full.isel(time=slice(None, None, step)))
        try:
            angles = angle_set(fit)
        except InspectError:
            continue
        for a, name in enumerate(angles.names):
            if name not in units:
                names.append(name)
                units[name] = angles.units[a]
        data = fit[angles.variable].transpose("time", "individual", angles.dim)
        data = np.asarray(data.values, float)
        for i, ind in enumerate(str(v) for v in fit["individual"].values):
            values = data[:, i] * angles.scale
            samples[(key, ind)] = {
                n: values[np.isfinite(values[:, a]), a] for a, n in enumerate(angles.names)
            }
    return names, units, samples


def plot_angle_distributions(
    fits: Mapping[str, xr.Dataset],
    *,
    angles: Sequence[str] | None = None,
    max_samples: int = MAX_SAMPLES,
    ncols: int = 4,
) -> Figure:
    """Violin plots of each angle, one violin per session and individual.

    Parameters
    ----------
    fits : mapping
        Session key -> fit (a :class:`~pipeline.inspect.FitArchive` is one).
    angles : sequence of str, optional
        Angle names (``joint_angle``'s or DOF names); default every angle that moves.
    max_samples : int
        Frames sampled per session and individual (evenly spaced).
    ncols : int
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per angle (degrees for angles); violins coloured by individual name, so
        the same animal keeps its colour across sessions; box plots beyond
        :data:`MAX_VIOLINS` groups.

    Raises
    ------
    InspectError
        No fit has angles, or an unknown angle name.
    """
    names, units, samples = angle_samples(fits, max_samples)
    if not samples:
        raise InspectError("plot_angle_distributions: no fit has joint_angle or dof_value")
    if angles is not None:
        unknown = [a for a in angles if a not in units]
        if unknown:
            raise InspectError(
                f"unknown angle(s) {', '.join(map(repr, unknown))}; angles: {', '.join(names)}"
            )
        names = list(angles)
    else:
        moving = [
            n
            for n in names
            if any(v.get(n, np.zeros(0)).size and np.ptp(v[n]) > 1e-9 for v in samples.values())
        ]
        names = moving or names
    groups = list(samples)
    identities = list(dict.fromkeys(ind for _, ind in groups))
    ncols = max(1, min(ncols, len(names)))
    nrows = math.ceil(len(names) / ncols)
    label_room = 0.075 * max(len(f"{s} / {i}") for s, i in groups) + 0.3
    fig, axes = panel_grid(
        nrows, ncols, panel=(3.4, 1.9), top=0.7, bottom=label_room + 0.15, sharex=True
    )
    x = np.arange(len(groups))
    tints = [color(identities.index(ind)) for _, ind in groups]
    labels = [f"{s} / {i}" if len(identities) > 1 else s for s, i in groups]
    for ax, name in zip(axes, names, strict=False):
        data = [samples[g].get(name, np.zeros(0)) for g in groups]
        present = [k for k, d in enumerate(data) if d.size]
        if not present:
            ax.set_visible(False)
            continue
        values = [data[k] for k in present]
        if len(groups) <= MAX_VIOLINS:
            parts = ax.violinplot(values, positions=x[present], widths=0.8, showmedians=True)
            for body, k in zip(parts["bodies"], present, strict=True):
                body.set_facecolor(tints[k])
                body.set_alpha(0.55)
            for key in ("cmedians", "cmins", "cmaxes", "cbars"):
                parts[key].set_color("0.25")
                parts[key].set_linewidth(0.8)
        else:
            ax.boxplot(values, positions=x[present], widths=0.6, showfliers=False)
        ax.set_title(f"{name} ({units[name]})", fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    axes[0].set_xticks(x)
    for ax in axes[: len(names)][-ncols:]:  # the bottom panel of each column names groups
        ax.set_xticks(x, labels, rotation=90, fontsize=7)
        ax.xaxis.set_tick_params(labelbottom=True)
    fig.suptitle(
        f"Angle distributions across {len(fits)} session(s) and {len(identities)} "
        "individual(s) (median marked)",
        fontsize=12,
        y=1 - 0.12 / fig.get_figheight(),
        va="top",
    )
    return fig
