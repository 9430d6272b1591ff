"""A calibration's template and calibrated bodies in their neutral pose, on one scale.

A stored calibration (:class:`pipeline.calibrate.calibration_record.Calibration`) holds the
calibrated plan and, of its template, only the sha256 plus what calibration changed: every segment's
template length, offset and scale, and every marker's template offset (the offsets at full
precision). Calibration changes nothing but joint offsets, so :func:`rebuild_template`
gets the template back from those, bit for bit (and :func:`find_template` checks the
rebuilt plan against the recorded sha256; a record from before the offsets were kept
exactly may not verify, and is then said to be unverified); a template given by the
caller is used instead when its sha256 matches. :func:`calibration_bodies` computes
both bodies' neutral-pose keypoints, :func:`plot_calibration_bodies` draws them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from pipeline.bodyplan.io import body_plan_sha256
from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.calibration_record import Calibration
from pipeline.errors import CalibrationError
from pipeline.inspect.data.display import color, view_axes
from pipeline.inspect.data.playback import skeleton_edges
from pipeline.inspect.plots.figures import new_figure
from pipeline.kinematics.fk_jacobian import forward_kinematics

__all__ = [
    "CalibrationBodies",
    "calibration_bodies",
    "find_template",
    "neutral_keypoints",
    "plot_calibration_bodies",
    "rebuild_template",
]

_TEMPLATE = {"color": "0.55", "lw": 3.2, "alpha": 0.75}
_CALIBRATED = {"color": color(0), "lw": 1.6}
_MARKER = {"marker": "D", "s": 30, "zorder": 5}


@dataclass(frozen=True)
class CalibrationBodies:
    """The two bodies of a calibration, ready to draw.

    Attributes
    ----------
    names : tuple of str
        Joint (keypoint) names, ``J`` of them, in the plans' order.
    edges : tuple of (int, int)
        ``(parent, child)`` joint indices of every bone.
    template : (J, 3) ndarray
        Neutral-pose keypoints of the template (plan length units, root at the origin).
    calibrated : (J, 3) ndarray
        The same for the calibrated plan.
    markers : tuple of int
        Joint indices of the marker keypoints (free keypoint offsets).
    source : str
        Where the template came from (for the caption).
    """

    names: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    template: np.ndarray
    calibrated: np.ndarray
    markers: tuple[int, ...]
    source: str

    def lengths(self, which: str) -> np.ndarray:
        """``(len(edges),)`` bone lengths of ``"template"`` or ``"calibrated"`` (length units)."""
        p = getattr(self, which)
        return np.array([np.linalg.norm(p[b] - p[a]) for a, b in self.edges])


def neutral_keypoints(plan: BodyPlan) -> np.ndarray:
    """``(J, 3)`` keypoints of ``plan`` at its neutral DOF values, root at the origin."""
    return np.asarray(forward_kinematics(plan, plan.neutral), dtype=float)


def _snap(value: float) -> float:
    """The shortest decimal within 4 ulp of ``value`` (undoes a scale and its inverse)."""
    for digits in range(1, 17):
        short = float(f"{value:.{digits}g}")
        if abs(short - value) <= 4 * math.ulp(value):
            return short
    return value


def rebuild_template(cal: Calibration, *, snap: bool = False) -> BodyPlan:
    """The template's geometry from a calibration record.

    Every segment's and marker's offset is its recorded ``template_offset`` (full
    precision, so the rebuilt plan is the template bit for bit); a segment of an older
    record without one gets the calibrated offset divided by its recorded scale. Every
    other joint is unchanged by calibration (the root, zero offsets).

    Parameters
    ----------
    cal : Calibration
    snap : bool
        Replace each segment offset divided out of the calibrated one (records without a
        segment ``template_offset``) by the shortest decimal within 4 ulp of it (recovers
        a template written in short decimals exactly, for its sha256).

    Returns
    -------
    BodyPlan
        The calibrated plan with the template's offsets (length units), no
        ``x-calibration`` extra and no source.

    Raises
    ------
    CalibrationError
        The record names a joint the plan lacks, a scale of 0 or not finite, or a segment
        whose calibrated length (offset) is not its scale times its template length
        (offset).
    """
    plan = cal.plan
    index = {n: i for i, n in enumerate(plan.joint_names)}
    offsets = np.array([j.offset_pos for j in plan.joints], dtype=float)
    snapped = np.zeros(len(offsets), dtype=bool)
    for s in cal.record.get("segments") or ():
        if s.get("joint") not in index:
            raise CalibrationError(f"the record's segment {s.get('joint')!r} is not a joint")
        scale, length = float(s["scale"]), float(s["template_length"])
        j = index[s["joint"]]
        if not math.isfinite(scale) or scale == 0:
            raise CalibrationError(f"segment {s['joint']!r} has scale {scale}")
        offsets[j] = offsets[j] / scale
        if not math.isclose(float(np.linalg.norm(offsets[j])), length, rel_tol=1e-6):
            raise CalibrationError(
                f"segment {s['joint']!r}: the calibrated length over the scale is not the "
                "recorded template length"
            )
        exact = s.get("template_offset")
        if exact is None:  # a record from before segments kept their template offset
            snapped[j] = snap
            continue
        if len(exact) != 3:
            raise CalibrationError(f"the record's segment {s['joint']!r} is not usable")
        exact = np.asarray(exact, dtype=float)
        if np.linalg.norm(offsets[j] - exact) > 1e-6 * length:
            raise CalibrationError(
                f"segment {s['joint']!r}: the calibrated offset over the scale is not the "
                "recorded template offset"
            )
        offsets[j] = exact
    for m in cal.record.get("markers") or ():
        if m.get("joint") not in index or len(m.get("template_offset") or ()) != 3:
            raise CalibrationError(f"the record's marker {m.get('joint')!r} is not usable")
        offsets[index[m["joint"]]] = np.asarray(m["template_offset"], dtype=float)
    joints = tuple(
        dataclasses.replace(
            j, offset_pos=tuple(_snap(v) if snapped[i] else float(v) for v in offsets[i])
        )
        for i, j in enumerate(plan.joints)
    )
    extras = {k: v for k, v in (plan.extras or {}).items() if k != "x-calibration"}
    return dataclasses.replace(plan, joints=joints, extras=extras or None, source=None)


def find_template(
    cal: Calibration, candidates: Iterable[BodyPlan] = ()
) -> tuple[BodyPlan | None, str]:
    """The calibration's template: a candidate with its sha256, else rebuilt from the record.

    Parameters
    ----------
    cal : Calibration
    candidates : iterable of BodyPlan
        Plans that may be the template (e.g. the run's body plan); matched by sha256.

    Returns
    -------
    template : BodyPlan or None
        None when the record cannot rebuild it.
    source : str
        How it was found, or why not (one sentence fragment, for the report).
    """
    sha = str(cal.record.get("template_sha256") or "")
    for plan in candidates:
        if sha and body_plan_sha256(plan) == sha:
            name = plan.source or plan.name or "given"
            return plan, f"the plan {name}; its sha256 matches the recorded one"
    try:
        rebuilt = [rebuild_template(cal, snap=d) for d in (True, False)]
    except (CalibrationError, KeyError, TypeError, ValueError) as exc:
        return None, (
            "no given plan has the recorded template sha256 and the calibration record "
            f"cannot rebuild the template ({exc})"
        )
    for plan in rebuilt:
        for spec in (plan.calibration, None):
            if sha and body_plan_sha256(dataclasses.replace(plan, calibration=spec)) == sha:
                return (
                    plan,
                    "rebuilt from the calibration record; its sha256 matches the recorded one",
                )
    return rebuilt[1], (
        "rebuilt from the calibration record's template lengths and marker offsets; its "
        "sha256 does not match the recorded one, so this is the record's account of the "
        "template (to the digits the record keeps), not a verified copy"
    )


def calibration_bodies(cal: Calibration, template: BodyPlan, source: str = "") -> CalibrationBodies:
    """Neutral-pose keypoints of ``template`` and of the calibrated plan.

    Parameters
    ----------
    cal : Calibration
    template : BodyPlan
        Its template (:func:`find_template`).
    source : str
        Where the template came from, kept for the caption.

    Returns
    -------
    CalibrationBodies

    Raises
    ------
    CalibrationError
        ``template`` has other joints than the calibrated plan.
    """
    names = cal.plan.joint_names
    if template.joint_names != names:
        raise CalibrationError("the template's joints are not the calibrated plan's")
    index = {n: i for i, n in enumerate(names)}
    listed = [m.get("joint") for m in cal.record.get("markers") or ()]
    markers = tuple(index[m] for m in listed if m in index)
    return CalibrationBodies(
        names=names,
        edges=tuple(skeleton_edges(cal.plan, list(names))),
        template=neutral_keypoints(template),
        calibrated=neutral_keypoints(cal.plan),
        markers=markers,
        source=source,
    )


def _limits(points: np.ndarray) -> np.ndarray:
    """``(3, 2)`` axis limits holding ``points`` (N, 3), no axis under 1/4 of the longest."""
    lo, hi = np.nanmin(points, axis=0), np.nanmax(points, axis=0)
    half = np.maximum((hi - lo) / 2, max(float((hi - lo).max()), 1e-9) / 8) * 1.1
    centre = (lo + hi) / 2
    return np.stack([centre - half, centre + half], axis=1)


def _label_markers(ax, bodies: CalibrationBodies, h: int, v: int) -> None:
    """Marker names beside the calibrated markers, pushed away from the body's middle."""
    p = bodies.calibrated[:, [h, v]]
    middle = np.nanmean(p, axis=0)
    for i in bodies.markers:
        sx, sy = np.where(p[i] >= middle, 1, -1)
        ax.annotate(
            bodies.names[i],
            p[i],
            fontsize=7,
            xytext=(7 * sx, 5 * sy),
            textcoords="offset points",
            ha="left" if sx > 0 else "right",
            va="bottom" if sy > 0 else "top",
            color="0.15",
            bbox={"fc": "white", "ec": "none", "alpha": 0.75, "pad": 0.4},
            zorder=6,
        )


def _panel(ax, bodies: CalibrationBodies, h: int, v: int) -> None:
    bones = [(a, b) for a, b in bodies.edges if b not in bodies.markers]
    ties = [(a, b) for a, b in bodies.edges if b in bodies.markers]
    for which, style, z in (("template", _TEMPLATE, 1), ("calibrated", _CALIBRATED, 2)):
        p = getattr(bodies, which)[:, [h, v]]
        ax.add_collection(
            LineCollection([(p[a], p[b]) for a, b in bones], zorder=z, label=which, **style)
        )
        ax.add_collection(
            LineCollection(
                [(p[a], p[b]) for a, b in ties],
                colors=style["color"],
                linewidths=1.1,
                linestyles=(0, (2, 1.5)),
                zorder=z + 2,
                label=f"{which} marker offsets",
            )
        )
        joints = [i for i in range(len(p)) if i not in bodies.markers]
        ax.scatter(*p[joints].T, s=9, color=style["color"], zorder=z + 0.5)
        m = p[list(bodies.markers)]
        if which == "template":
            ax.scatter(*m.T, facecolors="white", edgecolors=style["color"], **_MARKER)
        else:
            ax.scatter(*m.T, color=color(1), edgecolors="black", linewidths=0.5, **_MARKER)
    ax.grid(alpha=0.3)


def plot_calibration_bodies(
    bodies: CalibrationBodies,
    *,
    title: str = "",
    unit: str = "",
    space: tuple[str, str, str] = ("x", "y", "z"),
) -> Figure:
    """Template (grey) and calibrated (colour) bodies overlaid in three projections.

    Parameters
    ----------
    bodies : CalibrationBodies
    title : str
        The figure's title.
    unit : str
        Length unit of the axes.
    space : tuple of 3 str
        Axis names.

    Returns
    -------
    matplotlib.figure.Figure
        A third-angle layout: the plane of the horizontal axis ``h`` and the body's longest
        axis ``u`` (drawn vertical; the plan's frame declares no up), beside it the plane
        of the third axis ``d`` and ``u``, below it the ``h``-``d`` plane, and the legend.
        One scale for every axis of every panel and for both bodies.
    """
    both = np.concatenate([bodies.template, bodies.calibrated])
    lim = _limits(both)
    h, d, u, _ = view_axes("xyz"[int(np.argmax(np.ptp(bodies.template, axis=0)))])
    width = np.diff(lim, axis=1).ravel()
    fig = new_figure(9, 7.6 * (width[u] + width[d]) / (width[h] + width[d]) + 1.3)
    grid = fig.add_gridspec(
        2, 2, width_ratios=(width[h], width[d]), height_ratios=(width[u], width[d])
    )
    panels = {
        (h, u): fig.add_subplot(grid[0, 0]),
        (d, u): fig.add_subplot(grid[0, 1]),
        (h, d): fig.add_subplot(grid[1, 0]),
    }
    for (x, y), ax in panels.items():
        _panel(ax, bodies, x, y)
        ax.set_xlim(*lim[x])
        ax.set_ylim(*lim[y])
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel(f"{space[x]} ({unit})" if unit else space[x])
        ax.set_ylabel(f"{space[y]} ({unit})" if unit else space[y])
        ax.set_title(f"{space[x]}–{space[y]} plane", fontsize=10)
    _label_markers(panels[h, u], bodies, h, u)
    handles = [
        Line2D([], [], label="template", **_TEMPLATE),
        Line2D([], [], label="calibrated", **_CALIBRATED),
    ]
    if bodies.markers:
        handles += [
            Line2D([], [], ls="", marker="D", mfc="white", mec="0.55", label="template marker"),
            Line2D([], [], ls="", marker="D", color=color(1), mec="k", label="calibrated marker"),
            Line2D(
                [],
                [],
                color="0.3",
                lw=1.1,
                ls=(0, (2, 1.5)),
                label="marker offset (from its parent)",
            ),
        ]
    legend = fig.add_subplot(grid[1, 1])
    legend.axis("off")
    legend.legend(handles=handles, loc="center", fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=12)
    return fig
