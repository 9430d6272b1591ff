"""The viewer's controls: play and pause buttons, the frame slider, the joint menu.

Plain dicts in plotly's layout schema (``updatemenus`` and ``sliders`` entries). The play
buttons and the slider ask for no eased transition and a full redraw: frames move the 3D
scene, which plotly redraws rather than transitions.
"""

from __future__ import annotations

import numpy as np

from pipeline.inspect.data.angle_sets import AngleSet
from pipeline.inspect.viewer.angle_panel import angle_axis, angle_units

__all__ = ["frame_slider", "joint_menu", "play_buttons"]


def play_buttons(durations: dict[float, int]) -> dict:
    """Play buttons, one per speed, and pause.

    A play button animates on from the shown frame, each frame for its duration, with no
    eased transition and a full redraw (the 3D scene has no transitions).

    Parameters
    ----------
    durations : dict
        Speed (x real time) -> how long each frame is shown (ms).

    Returns
    -------
    dict
        A plotly ``updatemenus`` entry named ``"playback"``.
    """
    buttons = [
        {
            "label": f"▶ {speed:g}×",
            "method": "animate",
            "args": [
                None,
                {
                    "frame": {"duration": ms, "redraw": True},
                    "fromcurrent": True,
                    "transition": {"duration": 0},
                    "mode": "immediate",
                },
            ],
        }
        for speed, ms in durations.items()
    ]
    buttons.append(
        {
            "label": "❚❚ pause",
            "method": "animate",
            "args": [
                [None],
                {
                    "frame": {"duration": 0, "redraw": False},
                    "mode": "immediate",
                    "transition": {"duration": 0},
                },
            ],
        }
    )
    return {
        "type": "buttons",
        "direction": "left",
        "buttons": buttons,
        "x": 0.0,
        "y": 1.0,
        "xanchor": "left",
        "yanchor": "bottom",
        "pad": {"b": 4, "r": 4},
        "showactive": False,
        "name": "playback",
    }


def frame_slider(kept: np.ndarray, t: np.ndarray, t_unit: str) -> dict:
    """The slider moving the viewer to a kept frame, labelled by its time.

    Parameters
    ----------
    kept : numpy.ndarray of int, shape (F,)
        The kept frames (indices into ``t``); step ``k`` shows frame ``str(kept[k])``.
    t : numpy.ndarray, shape (T,)
        The session's time coordinate (``t_unit``).
    t_unit : str
        Its unit, shown after the current value.

    Returns
    -------
    dict
        A plotly ``sliders`` entry named ``"frame"``.
    """
    steps = [
        {
            "method": "animate",
            "label": f"{float(t[k]):.3g}",
            "args": [
                [str(int(k))],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": True},
                    "transition": {"duration": 0},
                },
            ],
        }
        for k in kept
    ]
    return {
        "active": 0,
        "steps": steps,
        "x": 0.0,
        "len": 0.52,
        "y": 0.06,
        "yanchor": "top",
        "currentvalue": {"prefix": "t = ", "suffix": f" {t_unit}", "font": {"size": 12}},
        "pad": {"t": 30},
        "transition": {"duration": 0},
        "name": "frame",
    }


def joint_menu(
    angles: AngleSet,
    groups: dict[str, list[int]],
    n_fixed: int,
    shown: str,
    joints: list[str],
    shapes: dict[str, list[dict]],
    ranges: dict[str, list[float] | None],
) -> dict:
    """The dropdown picking the joint whose angles the panel shows.

    Each button makes that joint's traces visible and swaps in its gap shapes, axis
    title and y-range.

    Parameters
    ----------
    angles : AngleSet
    groups : dict
        Joint -> its angles (indices into ``angles.names``); one button each, in order.
    n_fixed : int
        Traces before the angle panel's (3D, cursors, RMS error), always visible.
    shown : str
        The joint shown first (the menu's active button).
    joints : list of str
        The joint of each angle trace, in order (:func:`angle_traces`).
    shapes : dict
        Joint -> its gap shapes (:func:`gap_shapes`).
    ranges : dict
        Joint -> its y-range ``[low, high]`` or None (:func:`angle_traces`).

    Returns
    -------
    dict
        A plotly ``updatemenus`` entry named ``"joint"``.
    """
    buttons = []
    for name in groups:
        visible = [True] * n_fixed + [g == name for g in joints]
        buttons.append(
            {
                "label": name,
                "method": "update",
                "args": [
                    {"visible": visible},
                    {
                        "yaxis.title.text": angle_units(angles, groups, name),
                        "shapes": shapes[name],
                        **{f"yaxis.{k}": v for k, v in angle_axis(ranges.get(name)).items()},
                    },
                ],
            }
        )
    return {
        "type": "dropdown",
        "buttons": buttons,
        "active": list(groups).index(shown),
        "x": 0.6,
        "y": 1.02,
        "xanchor": "left",
        "yanchor": "bottom",
        "name": "joint",
    }
