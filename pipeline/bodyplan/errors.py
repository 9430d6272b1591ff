"""Errors and warnings raised while loading a body plan."""

from __future__ import annotations

__all__ = ["BodyPlanError", "UnobservableDofWarning"]


class BodyPlanError(ValueError):
    """A body-plan file (or dict) that cannot be loaded.

    The message names the file, the joint (and DOF index), the field and, where there are
    some, the valid choices, e.g. ``fly.json: joint 'lf_claw' dof 1: field 'type': 'hnge'
    is not one of hinge, slide``.

    Attributes
    ----------
    file : str
        The file path (or the ``source`` given for a dict; ``"<dict>"`` otherwise).
    joint : str, int or None
        The joint's name, or its index in ``joints`` when it has no usable name (shown as
        ``joint #<index>``); ``None`` for file-level problems.
    dof : int or None
        Index of the DOF in the joint's ``dofs`` list; ``None`` when not about one DOF.
    field : str or None
        The offending key; ``None`` when the problem is not about one key.
    reason : str
        What is wrong, without the location prefix.
    """

    def __init__(
        self,
        file: str,
        reason: str,
        *,
        joint: str | int | None = None,
        dof: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.joint = joint
        self.dof = dof
        self.field = field
        self.reason = reason
        where = file
        if joint is not None:
            where += f": joint #{joint}" if isinstance(joint, int) else f": joint {joint!r}"
        if dof is not None:
            where += f" dof {dof}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):  # keep the keyword attributes through pickling (Dask, processes)
        return (_rebuild, (self.file, self.reason, self.joint, self.dof, self.field))


def _rebuild(
    file: str, reason: str, joint: str | int | None, dof: int | None, field: str | None
) -> BodyPlanError:
    return BodyPlanError(file, reason, joint=joint, dof=dof, field=field)


class UnobservableDofWarning(UserWarning):
    """A DOF has no keypoint below it (its joint has no child), so no data can fit it."""
