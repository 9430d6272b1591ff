"""The one error type of the Kimodo bridge (:class:`pipeline.errors.KimodoError`)."""

from __future__ import annotations

from pipeline.errors import KimodoError

__all__ = ["KimodoError"]
