"""Import other kinematic model formats as body plans: MJCF, URDF, OpenSim, BVH.

One module per format; :func:`import_body_plan` picks one by suffix and content (or by
``format=``). Every importer reads the source with the format's own engine or a
maintained parser where one exists (MuJoCo, yourdfpy, OpenSim; BVH has its own small
parser), records its source and conversion choices in the plan's ``x-source`` and its
length unit in ``x-unit`` (see :attr:`~pipeline.bodyplan.BodyPlan.extras`), and raises one
:class:`~pipeline.bodyplan.BodyPlanError` per problem, naming the file, the element and its
line. Approximations (URDF mimic joints, OpenSim spline couplings, MJCF joint equalities)
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

from pipeline.bodyplan.errors import BodyPlanError
from pipeline.bodyplan.importers import bvh, mjcf, osim, urdf
from pipeline.bodyplan.importers._common import ConversionWarning, plan_unit
from pipeline.bodyplan.model import BodyPlan

__all__ = ["FORMATS", "ConversionWarning", "guess_format", "import_body_plan", "plan_unit"]

_IMPORTERS = {
    "mjcf": mjcf.import_mjcf,
    "urdf": urdf.import_urdf,
    "osim": osim.import_osim,
    "bvh": bvh.import_bvh,
}
#: Formats :func:`import_body_plan` reads (``json`` is the body-plan format itself).
FORMATS: tuple[str, ...] = ("json", *_IMPORTERS)
_SUFFIXES = {".json": "json", ".urdf": "urdf", ".osim": "osim", ".bvh": "bvh", ".mjcf": "mjcf"}
_HEADS = (
    ("HIERARCHY", "bvh"),
    ("<mujoco", "mjcf"),
    ("<robot", "urdf"),
    ("<OpenSimDocument", "osim"),
    ("{", "json"),
)


def _head(path: Path, size: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def guess_format(path: str | os.PathLike[str]) -> str:
    """The format of a model file, from its suffix, else its first element.

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    str
        One of :data:`FORMATS`; ``"json"`` when nothing else fits (so the JSON loader
        reports what is wrong with the file).
    """
    path = Path(os.fspath(path))
    by_suffix = _SUFFIXES.get(path.suffix.lower())
    if by_suffix is not None:
        return by_suffix
    head = _head(path)
    # skip an XML declaration and comments: the first element decides
    text = head.lstrip("\ufeff \t\r\n")
    while text.startswith(("<?", "<!--")):
        end = text.find("?>" if text.startswith("<?") else "-->")
        if end < 0:
            break
        text = text[end + (2 if text.startswith("<?") else 3) :].lstrip()
    for prefix, name in _HEADS:
        if text.startswith(prefix):
            return name
    return "json"


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
        The importer's keyword options (see each module).

    Returns
    -------
    BodyPlan

    Raises
    ------
    BodyPlanError
        Unknown format, or whatever the importer refuses.
    """
    path = Path(os.fspath(path))
    chosen = format or guess_format(path)
    if chosen not in _IMPORTERS:
        raise BodyPlanError(
            str(path), f"format {chosen!r} is not importable; choose one of {', '.join(_IMPORTERS)}"
        )
    try:
        return _IMPORTERS[chosen](path, **options)
    except TypeError as exc:
        if "unexpected keyword argument" in str(exc):
            raise BodyPlanError(str(path), f"{chosen} import: {exc}") from None
        raise
