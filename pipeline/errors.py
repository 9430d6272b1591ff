"""kinefit's one error family.

Every error kinefit raises on purpose derives from :class:`KinefitError`, and keeps the
builtin base it had before the family existed (``TracksError`` is still a ``ValueError``),
so ``except ValueError`` code keeps working. The command line prints a ``KinefitError`` (or
an ``OSError``) as one line and exits 1; anything else is an internal error (exit 2).

The families:

================  ==============  ======================================================
class             builtin base    raised for
================  ==============  ======================================================
BodyPlanError     ValueError      a body-plan file, dict or import that cannot be used
ConfigError       ValueError      a run config or setting that is unreadable or invalid
TracksError       ValueError      a tracks dataset or file that breaks the data contract
ObservationError  ValueError      solver observations or weights that do not fit the plan
DiscoveryError    ValueError      an archive, manifest or session name that is unusable
FitStoreError     ValueError      a path that is not a complete fit store
InspectError      ValueError      an inspection request the data cannot answer
ExportError       ValueError      an export request that cannot be written
KimodoError       ValueError      a Kimodo file or export request (an ExportError)
CameraError       ValueError      a camera calibration that cannot be used
CalibrationError  ValueError      a subject calibration that cannot be computed
FitError          RuntimeError    a fit that could not finish
SessionsFailed    RuntimeError    an archive run in which some sessions failed
OutputError       OSError         an output folder that cannot be written
ClusterError      RuntimeError    a cluster that cannot be made or keeps no workers
SessionLockedError RuntimeError   another live run holds the session's lock
ServerError       RuntimeError    the local Prefect server did not start or answer
DependencyError   ImportError     an installed library outside the versions kinefit supports
================  ==============  ======================================================
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "BodyPlanError",
    "CalibrationError",
    "CameraError",
    "ClusterError",
    "ConfigError",
    "DependencyError",
    "DiscoveryError",
    "ExportError",
    "FitError",
    "FitStoreError",
    "InspectError",
    "KimodoError",
    "KinefitError",
    "ObservationError",
    "OutputError",
    "ServerError",
    "SessionLockedError",
    "SessionsFailed",
    "TracksError",
    "flag",
    "reader_option",
    "user_interface",
]

#: The interface the user is in: "python" (arguments) or "cli" (flags); messages that tell
#: the user what to pass name the setting as that interface spells it.
_INTERFACE: contextvars.ContextVar[str] = contextvars.ContextVar("interface", default="python")


@contextmanager
def user_interface(name: str) -> Iterator[None]:
    """Within the block, messages name settings as ``name`` spells them ("cli", "python")."""
    token = _INTERFACE.set(name)
    try:
        yield
    finally:
        _INTERFACE.reset(token)


def flag(name: str, example: str | None = None, *, python: str | None = None) -> str:
    """A setting as the user's interface spells it: ``--to-unit m`` or ``to_unit='m'``.

    Parameters
    ----------
    name : str
        The Python argument's name (``"to_unit"``); the flag is ``--to-unit``.
    example : str, optional
        A value to show (``"m"``).
    python : str, optional
        The Python spelling when it is not ``name=example`` (``"overwrite=True"``).
    """
    if _INTERFACE.get() == "cli":
        return f"--{name.replace('_', '-')}" + (f" {example}" if example else "")
    if python is not None:
        return python
    return f"{name}={example!r}" if example else f"{name}="


def reader_option(name: str, example: str) -> str:
    """A reader option as the user's interface spells it: ``-O unit=mm`` or ``unit='mm'``."""
    if _INTERFACE.get() == "cli":
        return f"-O {name}={example}"
    return f"{name}={example!r}"


class KinefitError(Exception):
    """Base of every error kinefit raises on purpose (a user-facing, one-line message)."""


class BodyPlanError(KinefitError, ValueError):
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
        return (
            _rebuild_body_plan_error,
            (self.file, self.reason, self.joint, self.dof, self.field),
        )


def _rebuild_body_plan_error(
    file: str, reason: str, joint: str | int | None, dof: int | None, field: str | None
) -> BodyPlanError:
    return BodyPlanError(file, reason, joint=joint, dof=dof, field=field)


class ConfigError(KinefitError, ValueError):
    """A run config or setting is unreadable or invalid; the message names the key path."""


class TracksError(KinefitError, ValueError):
    """A tracks dataset breaks the data contract; the message lists every problem."""


class ObservationError(KinefitError, ValueError):
    """Observations or weights given to the solver that do not fit the body plan.

    The message gives the expected and the given shapes (or the bad values).
    """


class DiscoveryError(KinefitError, ValueError):
    """The archive, a manifest or a session name is unusable; the message says which."""


class FitStoreError(KinefitError, ValueError):
    """A path is not a complete kinefit fit store."""


class InspectError(KinefitError, ValueError):
    """A dataset lacks what an inspection helper needs, or a selection matches nothing."""


class ExportError(KinefitError, ValueError):
    """An export that cannot be written (wrong plan, missing variable, existing output)."""


class KimodoError(ExportError):
    """A Kimodo skeleton file, constraints file or export request that cannot be used.

    The message starts with the file (or option) it is about, then the entry index and
    type and the field, e.g. ``c.json: entry 2 (left-hand): local_joints_rot: expected
    30 joints for somaskel30, got 25``.
    """


class CameraError(KinefitError, ValueError):
    """A camera calibration (file or model) that cannot be used; names file and field."""


class CalibrationError(KinefitError, ValueError):
    """A subject calibration that cannot be computed from the given plan and tracks."""


class FitError(KinefitError, RuntimeError):
    """A fit that could not finish.

    Some chunk tasks failed (the partial store keeps the finished ones for a rerun), or
    the output folder cannot be written.
    """


class SessionsFailed(FitError):
    """An archive run in which some sessions failed; ``summary`` is the run's summary.

    Raised at the end of the run (after the summary was published), so the orchestrator
    records the run as failed while the other sessions' results are kept.
    """

    def __init__(self, summary: object, message: str) -> None:
        super().__init__(message)
        self.summary = summary

    def __reduce__(self):  # the summary survives pickling (Prefect, Dask)
        return (type(self), (self.summary, str(self)))


class OutputError(KinefitError, OSError):
    """An output folder that cannot be written (read-only, full, no permission).

    Raised before anything is written, naming the folder; what is stored there is unchanged.
    """


class ClusterError(KinefitError, RuntimeError):
    """A cluster cannot be made from the config, or its workers never start or are lost."""


class SessionLockedError(KinefitError, RuntimeError):
    """Another live run holds the session's lock; nothing was done."""


class ServerError(KinefitError, RuntimeError):
    """The local Prefect server did not start or answer."""


class DependencyError(KinefitError, ImportError):
    """An installed library's version is outside the range kinefit supports."""
