"""Drawing a skeleton onto an image (Pillow), and the virtual camera of 3D animations.

The drawing is plain: bones as lines in the individual's colour, joints as filled discs
centred on their projected pixel, observed keypoints as white-edged black crosses,
joints with a large residual ringed in red. Pixel coordinates follow the image
convention of OpenCV and of kinefit's cameras: ``(u, v)`` = (column, row), the centre of
the top-left pixel at ``(0, 0)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from pipeline.inspect.data.display import color

__all__ = ["OrbitCamera", "draw_frame", "edges_of"]

JOINT_RADIUS = 4
BONE_WIDTH = 3


def edges_of(paths: np.ndarray) -> list[tuple[int, int]]:
    """Bones (parent, child keypoint indices) of :func:`~.viewer_data.skeleton_paths`."""
    return [
        (int(a), int(b)) for a, b in zip(paths[:-1], paths[1:], strict=True) if a >= 0 and b >= 0
    ]


@dataclass(frozen=True)
class OrbitCamera:
    """An orthographic camera looking at a box from an azimuth and elevation.

    Attributes
    ----------
    centre : numpy.ndarray, shape (3,)
        World point at the image centre (length units).
    half_extent : float
        Half the world length shown across the shorter image side.
    width, height : int
        Image size (px).
    azimuth, elevation : float
        Viewing direction (degrees) about and above the ground plane.
    up : int
        World up axis (0, 1, 2 for x, y, z); ``up_sign`` -1 when it points down.
    up_sign : float
    """

    centre: np.ndarray
    half_extent: float
    width: int
    height: int
    azimuth: float = 35.0
    elevation: float = 20.0
    up: int = 2
    up_sign: float = 1.0

    def _basis(self) -> np.ndarray:
        """Rows: image right, image down, towards the viewer (world coordinates)."""
        a, b = (i for i in range(3) if i != self.up)
        az, el = np.radians(self.azimuth), np.radians(self.elevation)
        up = np.zeros(3)
        up[self.up] = self.up_sign
        ea, eb = np.eye(3)[a], np.eye(3)[b]
        toward = np.cos(el) * (np.cos(az) * ea + np.sin(az) * eb) + np.sin(el) * up
        right = np.cross(up, toward)
        right /= np.linalg.norm(right)
        down = -np.cross(toward, right)
        return np.stack([right, down, toward])

    def project(self, points: np.ndarray) -> np.ndarray:
        """Pixels ``(N, 2)`` of world points ``(N, 3)`` (NaN stays NaN)."""
        basis = self._basis()
        rel = np.asarray(points, dtype=float) - self.centre
        uv = rel @ basis[:2].T
        scale = min(self.width, self.height) / (2 * self.half_extent)
        return uv * scale + np.array([(self.width - 1) / 2, (self.height - 1) / 2])


def _disc(draw: ImageDraw.ImageDraw, u: float, v: float, r: float, fill, outline=None):
    draw.ellipse([u - r, v - r, u + r, v + r], fill=fill, outline=outline)


def draw_frame(
    image: Image.Image,
    fitted: np.ndarray,
    observed: np.ndarray | None,
    edges: Sequence[tuple[int, int]],
    large: np.ndarray | None = None,
    text: str = "",
) -> None:
    """Draw every individual of one frame onto ``image`` (in place).

    Parameters
    ----------
    image : PIL.Image.Image
        RGB.
    fitted : numpy.ndarray, shape (I, K, 2)
        Pixels of the fitted joints per individual (NaN: not drawn).
    observed : numpy.ndarray or None, shape (I, K, 2)
        Pixels of the observed keypoints.
    edges : sequence of (int, int)
        Bones between keypoint indices.
    large : numpy.ndarray of bool or None, shape (I, K)
        Joints ringed in red.
    text : str
        A caption in the top-left corner.
    """
    draw = ImageDraw.Draw(image)
    for i, joints in enumerate(fitted):
        tint = color(i)
        ok = np.isfinite(joints).all(axis=1)
        for a, b in edges:
            if ok[a] and ok[b]:
                draw.line([tuple(joints[a]), tuple(joints[b])], fill=tint, width=BONE_WIDTH)
        for k in np.flatnonzero(ok):
            _disc(draw, *joints[k], JOINT_RADIUS, fill=tint)
            if large is not None and large[i, k]:
                _disc(draw, *joints[k], JOINT_RADIUS + 4, fill=None, outline="#d62728")
        if observed is None:
            continue
        for u, v in observed[i][np.isfinite(observed[i]).all(axis=1)]:
            for width, ink in ((4, "white"), (2, "black")):
                draw.line([(u - 4, v - 4), (u + 4, v + 4)], fill=ink, width=width)
                draw.line([(u - 4, v + 4), (u + 4, v - 4)], fill=ink, width=width)
    if text:
        draw.rectangle([0, 0, 8 + 7 * len(text), 20], fill="white")
        draw.text((4, 4), text, fill="black")
