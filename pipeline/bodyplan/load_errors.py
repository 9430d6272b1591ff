"""Errors and warnings raised while loading a body plan."""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import TYPE_CHECKING

from pipeline.errors import BodyPlanError

if TYPE_CHECKING:
    from pipeline.bodyplan.model import Joint

__all__ = ["BodyPlanError", "UnobservableDofWarning", "warn_unobservable"]


class UnobservableDofWarning(UserWarning):
    """A DOF has no keypoint below it (its joint has no child), so no data can fit it."""


def warn_unobservable(
    joints: list[Joint] | tuple[Joint, ...],
    file: str,
    *,
    settled: Collection[str] = (),
    subject: str = "DOFs with no keypoint below them",
    stacklevel: int = 4,
) -> None:
    """Warn (:class:`UnobservableDofWarning`) of the DOFs of leaf joints, which no data fits.

    Parameters
    ----------
    joints : sequence of Joint
        The plan's joints, in tree order.
    file : str
        The plan's source, named in the message.
    settled : collection of str
        DOF names something else sets (an OpenSim setup's coordinate tasks): not listed.
    subject : str
        What the message calls the listed DOFs.
    stacklevel : int
        As :func:`warnings.warn`'s.
    """
    parents = {j.parent for j in joints}
    listed = []
    for j in (j for j in joints if j.dofs and j.name not in parents):
        names = [d.name or f"{j.name}/{i}" for i, d in enumerate(j.dofs) if d.name not in settled]
        if names:
            listed.append(f"joint {j.name!r} ({', '.join(names)})")
    if not listed:
        return
    warnings.warn(
        f"{file}: {subject} cannot be fitted (their joint has no child): {'; '.join(listed)}",
        UnobservableDofWarning,
        stacklevel=stacklevel,
    )
