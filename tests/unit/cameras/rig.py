"""Realistic camera rigs for the camera tests (metres, 1280x1024 machine-vision cameras)."""

from __future__ import annotations

import numpy as np

from pipeline.cameras import Camera

RADTAN = (-0.21, 0.094, 0.0011, -0.0007, -0.018)  # a 8 mm C-mount lens, barrel
FISHEYE = (0.052, -0.011, 0.0031, -0.00052)  # a 2.8 mm wide-angle lens


def look_at(center, target, up=(0.0, 0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """World-to-camera ``(R, t)`` of a camera at ``center`` looking at ``target``."""
    center, target, up = (np.asarray(v, dtype=np.float64) for v in (center, target, up))
    z = target - center
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    rot = np.stack([x, y, z])
    return rot, -rot @ center


def ring(
    n: int = 4,
    radius: float = 3.0,
    height: float = 1.2,
    target=(0.0, 0.0, 0.9),
    fisheye: tuple[int, ...] = (3,),
    unit: str = "m",
) -> list[Camera]:
    """``n`` cameras on a circle around ``target``; the ``fisheye`` indices get that lens."""
    cams = []
    for i in range(n):
        a = 2 * np.pi * i / n + 0.3
        rot, t = look_at((radius * np.cos(a), radius * np.sin(a), height + 0.2 * i), target)
        fish = i in fisheye
        cams.append(
            Camera(
                name=f"cam{chr(ord('A') + i)}",
                size=(1280, 1024),
                fx=(620.0 if fish else 1650.0) + 3.1 * i,
                fy=(619.0 if fish else 1648.5) + 2.7 * i,
                cx=640.0 + 4.5 * i,
                cy=512.0 - 3.2 * i,
                distortion="fisheye" if fish else "radtan",
                coefficients=FISHEYE if fish else RADTAN,
                rotation=rot,
                translation=t,
                unit=unit,
            )
        )
    return cams
