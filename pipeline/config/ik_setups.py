"""The run config's ``ik_setup``: OpenSim IK setups whose task sets the archive's fits use.

One setup for the whole archive, or one per session (by session name), or both (a
session's own wins)::

    ik_setup: Setup_IK.xml
    ik_setup: {archive: Setup_IK.xml, sessions: {walk1: walk1_Setup_IK.xml}}

Each setup's ``IKTaskSet`` is read when the config is validated (its marker weights and
coordinate tasks: :mod:`pipeline.opensim_setup.fit_terms`); relative paths are relative
to the config file's folder.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["IKSetups"]


class IKSetups(BaseModel):
    """OpenSim IK setups of the archive's fits.

    Attributes
    ----------
    archive : str or None
        The setup for every session without its own (default None: none).
    sessions : dict of str to str
        Session name -> its own setup.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    archive: str | None = None
    sessions: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _one_file(cls, value: Any) -> Any:
        return {"archive": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _readable(self) -> IKSetups:
        from pipeline.opensim_setup.fit_terms import read_task_set

        for path in [self.archive, *self.sessions.values()]:
            if path is not None:
                read_task_set(path)  # ConfigError names the file and the field
        return self

    def for_session(self, name: str) -> str | None:
        """The setup of session ``name`` (its own, else the archive's, else None)."""
        return self.sessions.get(name, self.archive)
