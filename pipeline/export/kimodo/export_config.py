"""What to export to Kimodo: frame choices per constraint type and the export settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.meta import MAX_SEGMENT_FRAMES
from pipeline.export.kimodo.skeleton import EE_NAMES

__all__ = ["ExportConfig", "FrameSpec"]


@dataclass(frozen=True)
class FrameSpec:
    """Frames of one constraint type: explicit frames, every N frames, or none.

    Attributes
    ----------
    frames : tuple of int
        Frame indices in the exported 30 fps clip.
    every : int or None
        Every ``every``-th frame from 0.
    """

    frames: tuple[int, ...] = ()
    every: int | None = None

    def __post_init__(self) -> None:
        if self.every is not None and (isinstance(self.every, bool) or self.every < 1):
            raise KimodoError(f"every: must be a positive number of frames, got {self.every!r}")

    @classmethod
    def parse(cls, text: str | None, option: str = "frames") -> FrameSpec:
        """Read ``"0,45,90"`` or ``"every:30"`` (None or empty: no frames)."""
        if not text:
            return cls()
        text = text.strip()
        try:
            if text.startswith("every:"):
                return cls(every=int(text.split(":", 1)[1]))
            return cls(frames=tuple(int(v) for v in text.split(",") if v.strip()))
        except ValueError:
            raise KimodoError(
                f"{option}: {text!r} is neither frame numbers ('0,45,90') nor 'every:N'"
            ) from None

    def __bool__(self) -> bool:
        return bool(self.frames) or self.every is not None

    def resolve(self, n_frames: int, option: str) -> np.ndarray:
        """Sorted unique frames inside ``[0, n_frames)``."""
        if self.every is not None:
            return np.arange(0, n_frames, self.every)
        frames = np.unique(np.asarray(self.frames, dtype=np.int64))
        bad = frames[(frames < 0) | (frames >= n_frames)]
        if bad.size:
            raise KimodoError(
                f"{option}: frames {bad.tolist()} are outside the exported clip [0, {n_frames})"
            )
        return frames


@dataclass(frozen=True)
class ExportConfig:
    """What to write into a Kimodo constraints file, and how to read the fit.

    Attributes
    ----------
    root2d : {"dense", "waypoints", "off"}
        The smoothed root path on every frame, every ``root2d_every`` frames (plus the
        last), or none.
    root2d_every : int
        Waypoint spacing (frames at 30 fps).
    root2d_heading : bool
        Also write ``global_root_heading`` on the root2d frames.
    fullbody, left_hand, right_hand, left_foot, right_foot, end_effector : FrameSpec
        Keyframes of each type.
    end_effector_joints : tuple of str
        ``joint_names`` of the end-effector entry, from ``LeftHand``, ``RightHand``,
        ``LeftFoot``, ``RightFoot``, ``Hips``.
    text : str
        Prompt written to ``meta.json``.
    individual : str or None
        Which individual of the fit; required when it has several.
    name_map : mapping or None
        ``{plan joint: Kimodo joint}``; None when the plan is the Kimodo skeleton.
    unit, up_axis : str or None
        Override the fit's ``unit`` / ``up_axis`` attrs.
    fps : float or None
        Frame rate when the fit's time axis counts frames.
    floor : float or "lowest"
        Floor height along the up axis (plan units), or put the lowest joint on y = 0.
    start, stop : float or None
        Time window (s) of the fit to export.
    max_segment_frames : int
        Longest prompt segment (Kimodo: 300 frames).
    """

    root2d: Literal["dense", "waypoints", "off"] = "dense"
    root2d_every: int = 30
    root2d_heading: bool = True
    fullbody: FrameSpec = field(default_factory=FrameSpec)
    left_hand: FrameSpec = field(default_factory=FrameSpec)
    right_hand: FrameSpec = field(default_factory=FrameSpec)
    left_foot: FrameSpec = field(default_factory=FrameSpec)
    right_foot: FrameSpec = field(default_factory=FrameSpec)
    end_effector: FrameSpec = field(default_factory=FrameSpec)
    end_effector_joints: tuple[str, ...] = ()
    text: str = ""
    individual: str | None = None
    name_map: Mapping[str, str] | None = None
    unit: str | None = None
    up_axis: str | None = None
    fps: float | None = None
    floor: float | Literal["lowest"] = "lowest"
    start: float | None = None
    stop: float | None = None
    max_segment_frames: int = MAX_SEGMENT_FRAMES

    def __post_init__(self) -> None:
        if self.root2d not in ("dense", "waypoints", "off"):
            raise KimodoError(f"root2d: {self.root2d!r} is not one of dense, waypoints, off")
        if self.root2d_every < 1 or not 1 <= self.max_segment_frames <= MAX_SEGMENT_FRAMES:
            raise KimodoError(
                f"root2d_every must be >= 1 and max_segment_frames in [1, {MAX_SEGMENT_FRAMES}]"
            )
        bad = [n for n in self.end_effector_joints if n not in EE_NAMES]
        if bad:
            raise KimodoError(f"end_effector_joints: unknown {bad}; valid: {', '.join(EE_NAMES)}")
        if bool(self.end_effector) != bool(self.end_effector_joints):
            raise KimodoError(
                "end_effector: give both the frames and end_effector_joints (or neither)"
            )
        if self.floor != "lowest" and not isinstance(self.floor, int | float):
            raise KimodoError(f"floor: expected a number or 'lowest', got {self.floor!r}")
