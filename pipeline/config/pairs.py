"""``KEY=VALUE`` pairs: the one parser of every option given as a name and a value.

Reader options (``-O unit=mm``), config assignments (``--set solver.n_iterations=20``),
camera files (``--views camA=a.csv``), frame offsets (``--offset camB=2``) and body-plan
renames (``--rename OLD=NEW``) are all parsed here, so each mistake (no ``=``, an empty
name or value, a name that is not allowed, a name given twice, a value of the wrong type)
is one :class:`~pipeline.errors.ConfigError` that names the option and the item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from pipeline.errors import ConfigError

__all__ = ["KEY_RULES", "parse_pair", "parse_pairs"]

#: What a key may be: any text without ``=``, a Python identifier, or dotted identifiers.
KEY_RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "name": (re.compile(r"[^=]+"), "a name"),
    "identifier": (re.compile(r"[A-Za-z_][A-Za-z0-9_]*"), "a name of letters, digits and _"),
    "path": (
        re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"),
        "a dotted key path such as solver.n_iterations",
    ),
}


def parse_pair(
    item: str,
    option: str,
    *,
    key: str = "name",
    allow_empty: bool = False,
    form: str = "KEY=VALUE",
) -> tuple[str, str]:
    """Split one ``KEY=VALUE`` item; key and value are stripped of outer spaces.

    Parameters
    ----------
    item : str
        The text as given, e.g. ``"unit=mm"``.
    option : str
        How the caller names the setting in messages (``"--option"``, ``"options"``).
    key : {"name", "identifier", "path"}
        What the key may be (:data:`KEY_RULES`).
    allow_empty : bool
        Accept ``KEY=`` (an empty value); otherwise it is an error.
    form : str
        The expected form shown in messages (``"NAME=FILE"``, ``"OLD=NEW"``).

    Returns
    -------
    tuple of str
        ``(key, value)``.

    Raises
    ------
    ConfigError
        No ``=``, an empty or malformed key, an empty value.
    """
    name, sep, value = item.partition("=")
    name, value = name.strip(), value.strip()
    if not sep:
        raise ConfigError(f"{option} {item!r}: expected {form} (no '=' in it)")
    if not name:
        raise ConfigError(f"{option} {item!r}: expected {form}; the name before '=' is empty")
    pattern, what = KEY_RULES[key]
    if not pattern.fullmatch(name):
        raise ConfigError(f"{option} {item!r}: {name!r} is not {what}")
    if not value and not allow_empty:
        raise ConfigError(f"{option} {item!r}: expected {form}; the value after '=' is empty")
    return name, value


def parse_pairs(
    items: Iterable[str] | None,
    option: str,
    value: Callable[[str], Any] = str,
    *,
    key: str = "name",
    allow_empty: bool = False,
    form: str = "KEY=VALUE",
) -> dict[str, Any]:
    """``["camA=a.csv", "camB=b.csv"]`` -> ``{"camA": "a.csv", "camB": "b.csv"}``.

    Parameters
    ----------
    items : iterable of str or None
        The items as given (None: none).
    option : str
        How the caller names the setting in messages.
    value : callable
        Turns a value's text into the value (``int``, a YAML reader); a ``ValueError``
        it raises is reported with the item.
    key, allow_empty, form
        As for :func:`parse_pair`.

    Returns
    -------
    dict
        Key -> converted value, in the order given.

    Raises
    ------
    ConfigError
        A malformed item (:func:`parse_pair`), a key given twice, a value ``value``
        refuses.
    """
    out: dict[str, Any] = {}
    for item in items or ():
        name, text = parse_pair(item, option, key=key, allow_empty=allow_empty, form=form)
        if name in out:
            raise ConfigError(f"{option} {item!r}: {name!r} is given twice")
        try:
            out[name] = value(text)
        except ValueError as exc:
            raise ConfigError(f"{option} {item!r}: {exc}") from None
    return out
