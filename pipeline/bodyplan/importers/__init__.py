"""Import other kinematic model formats as body plans: MJCF, URDF, OpenSim, BVH.

One module per format, each following the format contract
(:mod:`pipeline.formats.contract`: ``FORMAT``, ``SUFFIXES``, ``sniff`` and the call
``import_plan(path, *, <options>)``); :func:`import_body_plan` picks one by suffix and
content (or by ``format=``) through :data:`REGISTRY` and refuses an option the
importer's signature does not list before reading anything. Every importer reads the
source with the format's own engine or a maintained parser where one exists (MuJoCo,
yourdfpy, OpenSim; BVH has a small parser, shared with the BVH tracks reader), records
its source and conversion choices in the plan's ``x-source`` and its length unit in
``x-unit`` (see :attr:`~pipeline.bodyplan.BodyPlan.extras`), and raises one
:class:`~pipeline.bodyplan.BodyPlanError` per problem, naming the file, the element and
its line. Approximations (URDF mimic joints, OpenSim spline couplings, MJCF joint equalities)
are reported with a :class:`ConversionWarning`; ``strict=True`` refuses them.

========  ===============================  =================================================
format    files                            needs
========  ===============================  =================================================
mjcf      ``.xml`` (``<mujoco>``)          ``pip install 'kinefit[mjcf]'`` (mujoco)
urdf      ``.urdf`` (``<robot>``)          ``pip install 'kinefit[urdf]'`` (yourdfpy)
osim      ``.osim`` (``<OpenSimDocument>``) ``pip install 'kinefit[osim]'`` (opensim)
bvh       ``.bvh`` (``HIERARCHY``)         built in
========  ===============================  =================================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pipeline.bodyplan.importers.finishing import ConversionWarning, plan_unit, plan_up_axis
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan
from pipeline.formats.contract import FormatRegistry, Wording

__all__ = [
    "FORMATS",
    "REGISTRY",
    "ConversionWarning",
    "guess_format",
    "import_body_plan",
    "plan_unit",
    "plan_up_axis",
]

#: Importer modules, in sniffing order.
IMPORTER_MODULES: tuple[str, ...] = tuple(
    f"pipeline.bodyplan.importers.{name}" for name in ("mjcf", "urdf", "osim", "bvh")
)
#: The importers' registry.
REGISTRY = FormatRegistry(
    "body-plan",
    IMPORTER_MODULES,
    call="import_plan",
    error=lambda where, reason: BodyPlanError(where or "<model>", reason),
    wording=Wording(
        unknown_format="format {name!r} is not importable; choose one of {names}",
        unknown_option=(
            "{name} import: unexpected keyword argument {quoted}; valid options: {valid}"
        ),
    ),
    trust_suffix=True,
)
#: Formats :func:`import_body_plan` reads (``json`` is the body-plan format itself).
FORMATS: tuple[str, ...] = ("json", "mjcf", "urdf", "osim", "bvh")


def guess_format(path: str | os.PathLike[str]) -> str:
    """The format of a model file, from its suffix, else its first element.

    A suffix one importer alone claims decides (``.urdf``, ``.osim``, ``.bvh``,
    ``.mjcf``); ``.xml``, which several claim, and unknown suffixes go by the first
    element (``<mujoco>``, ``<robot>``, ``<OpenSimDocument>``, ``HIERARCHY``).

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    str
        One of :data:`FORMATS`; ``"json"`` for ``.json`` files and when nothing else fits
        (so the JSON loader reports what is wrong with the file).
    """
    path = Path(os.fspath(path))
    if path.suffix.lower() == ".json":
        return "json"
    found, _ = REGISTRY.detect(path)
    return "json" if found is None else found.name


def import_body_plan(
    path: str | os.PathLike[str], *, format: str | None = None, **options: Any
) -> BodyPlan:
    """Import a model file as a body plan.

    Parameters
    ----------
    path : str or PathLike
    format : {"mjcf", "urdf", "osim", "bvh"}, optional
        Default: :func:`guess_format`.
    **options
        The importer's keyword options (its ``import_plan`` signature).

    Returns
    -------
    BodyPlan

    Raises
    ------
    BodyPlanError
        Unknown format or option (the message lists the valid ones; nothing is read), or
        whatever the importer refuses.
    """
    path = Path(os.fspath(path))
    fmt = REGISTRY.get(format or guess_format(path), path)
    options = REGISTRY.check_options(fmt, options, path)
    return fmt.call(path, **options)
