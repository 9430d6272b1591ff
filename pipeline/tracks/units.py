"""Length units of tracks: one spelling per unit, and conversion between them.

Readers record the unit the file gives (``"mm"`` from a C3D file, ``"px"`` for image
coordinates) or ``"unknown"``; :func:`canonical_unit` turns the spellings files use
(``"pixels"``, ``"millimeters"``, ``None``) into the one name kinefit writes, and
:func:`convert_length` rescales positions to another unit (``kinefit ingest --to-unit m``).
Pixels and ``unknown`` have no length, so they convert to nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.errors import TracksError, reader_option

__all__ = [
    "LENGTH_UNITS",
    "METRES_PER_UNIT",
    "UNKNOWN",
    "canonical_unit",
    "check_unit",
    "convert_length",
    "unit_factor",
]

#: The unit of a file that does not say.
UNKNOWN = "unknown"
#: Metres in one of each convertible length unit.
METRES_PER_UNIT: dict[str, float] = {
    "km": 1e3,
    "m": 1.0,
    "dm": 0.1,
    "cm": 1e-2,
    "mm": 1e-3,
    "um": 1e-6,
    "in": 0.0254,
    "ft": 0.3048,
}
#: Every unit name kinefit writes in ``attrs["unit"]``.
LENGTH_UNITS: tuple[str, ...] = (*METRES_PER_UNIT, "px", UNKNOWN)

_ALIASES = {
    alias: unit
    for unit, aliases in {
        "km": ("kilometer", "kilometers", "kilometre", "kilometres"),
        "m": ("meter", "meters", "metre", "metres"),
        "dm": ("decimeter", "decimeters", "decimetre", "decimetres"),
        "cm": ("centimeter", "centimeters", "centimetre", "centimetres"),
        "mm": ("millimeter", "millimeters", "millimetre", "millimetres"),
        "um": ("µm", "μm", "micrometer", "micrometers", "micrometre", "micron", "microns"),
        "in": ("inch", "inches"),
        "ft": ("foot", "feet"),
        "px": ("pixel", "pixels", "pix"),
        UNKNOWN: ("", "none", "n/a", "unspecified"),
    }.items()
    for alias in aliases
}


#: The one spelled-out form :func:`describe_units` shows per unit.
_SPELLED = {
    "km": "kilometre",
    "m": "metre",
    "dm": "decimetre",
    "cm": "centimetre",
    "mm": "millimetre",
    "um": "micrometre",
    "in": "inch",
    "ft": "foot",
    "px": "pixels",
    UNKNOWN: "not recorded",
}


def canonical_unit(unit: Any) -> str:
    """Return kinefit's spelling of a length unit.

    Known units and their spelled-out forms map to :data:`LENGTH_UNITS` (``"pixels"`` ->
    ``"px"``, ``"Millimeters"`` -> ``"mm"``, ``None`` -> ``"unknown"``). Any other text is
    kept as the file wrote it (stripped): it is recorded, but cannot be converted.

    Parameters
    ----------
    unit : str or None

    Returns
    -------
    str
    """
    if unit is None:
        return UNKNOWN
    text = unit.decode() if isinstance(unit, bytes) else str(unit)
    text = text.strip()
    key = text.lower()
    if key in LENGTH_UNITS:
        return key
    return _ALIASES.get(key, text)


def describe_units(convertible: bool = False) -> str:
    """``"km (kilometre), m (metre), ..."``: the unit names a user may give, one alias each.

    Every spelled-out form (metre or meter, singular or plural) is accepted too.
    """
    names = METRES_PER_UNIT if convertible else LENGTH_UNITS
    return ", ".join(f"{unit} ({_SPELLED[unit]})" for unit in names)


def check_unit(unit: Any, option: str, source: str, *, convertible: bool = False) -> str:
    """Return kinefit's spelling of a unit a user gave, or refuse it naming the valid ones.

    Unlike :func:`canonical_unit` (which keeps a file's unknown text as written), a unit
    given in an option must be one of :data:`LENGTH_UNITS` or an alias of one.

    Parameters
    ----------
    unit : Any
        The value as given (``"mm"``, ``"millimetres"``, ``"furlong"``, ``3``).
    option : str
        How the caller names the setting in messages (``"option 'unit'"``, ``"--to-unit"``).
    source : str
        The file the setting is for, named first in messages.
    convertible : bool
        Require a unit with a length (not ``px`` or ``unknown``): a conversion target.

    Returns
    -------
    str

    Raises
    ------
    TracksError
        Not a unit name kinefit knows; the message lists the units and their aliases.
    """
    text = unit.strip() if isinstance(unit, str) else None
    name = canonical_unit(text) if text else None
    allowed = METRES_PER_UNIT if convertible else LENGTH_UNITS
    if name not in allowed:
        if convertible:
            raise TracksError(
                f"{source}: {option}: cannot convert to unit {unit!r}; convertible units: "
                f"{describe_units(convertible)}"
            )
        raise TracksError(
            f"{source}: {option}: {unit!r} is not a length unit kinefit knows; valid units: "
            f"{describe_units(convertible)}"
        )
    return name


def unit_factor(from_unit: str, to_unit: str, source: str = "<tracks>") -> float:
    """Return the factor that turns lengths in ``from_unit`` into ``to_unit``.

    Raises
    ------
    TracksError
        Either unit has no known length (pixels, ``unknown``, unrecognized text); the
        message lists the convertible units.
    """
    valid = ", ".join(METRES_PER_UNIT)
    target, origin = canonical_unit(to_unit), canonical_unit(from_unit)
    if target not in METRES_PER_UNIT:
        raise TracksError(
            f"{source}: cannot convert to unit {to_unit!r}; convertible units: {valid}"
        )
    if origin not in METRES_PER_UNIT:
        why = {
            "px": "image pixels have no length (triangulate calibrated views first)",
            UNKNOWN: "the file does not record its unit: pass the reader option "
            f"{reader_option('unit', 'mm')} to say what it is",
        }.get(origin, f"{origin!r} is not a length unit kinefit knows")
        raise TracksError(
            f"{source}: field 'unit': cannot convert tracks in {origin!r} to {target!r}: "
            f"{why}; convertible units: {valid}"
        )
    return METRES_PER_UNIT[origin] / METRES_PER_UNIT[target]


def convert_length(ds: Any, to_unit: str, source: str = "<tracks>") -> Any:
    """Rescale a tracks dataset's ``position`` to ``to_unit``.

    Parameters
    ----------
    ds : xarray.Dataset
        Tracks whose ``attrs["unit"]`` names a convertible unit.
    to_unit : str
        Target unit (any spelling :func:`canonical_unit` knows).
    source : str
        Named in messages.

    Returns
    -------
    xarray.Dataset
        ``position`` times the factor (float32), ``attrs["unit"]`` the target, and
        ``attrs["converted_from_unit"]`` the unit it had (only when it changed).

    Raises
    ------
    TracksError
        See :func:`unit_factor`.
    """
    origin, target = canonical_unit(ds.attrs.get("unit")), canonical_unit(to_unit)
    factor = unit_factor(origin, target, source)
    if origin == target:
        return ds
    position = (ds["position"].astype(np.float64) * factor).astype(np.float32)
    out = ds.assign(position=position)
    out.attrs.update(ds.attrs, unit=target, converted_from_unit=origin)
    return out
