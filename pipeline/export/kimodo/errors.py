"""The one error type of the Kimodo bridge."""

from __future__ import annotations

__all__ = ["KimodoError"]


class KimodoError(ValueError):
    """A Kimodo skeleton file, constraints file or export request that cannot be used.

    The message starts with the file (or option) it is about, then the entry index and
    type and the field, e.g. ``c.json: entry 2 (left-hand): local_joints_rot: expected
    30 joints for somaskel30, got 25``.
    """
