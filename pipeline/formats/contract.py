"""The format contract: how a file format declares itself, and the registry that picks one.

Tracks readers, exporters, body-plan importers and calibration-file readers all follow it.
A format is a module (or an object in one, named ``"module:attribute"``) that declares

- ``FORMAT: str``: the name users pass as ``format=`` (``--format``);
- ``SUFFIXES: tuple[str, ...]``: the lower-case file suffixes it claims (``".bvh"``);
- ``sniff(path) -> bool``: a cheap content check; it decides where a suffix is claimed by
  several formats, or by none;
- the kind's call (``read`` for tracks and calibration files, ``outputs`` for exporters,
  ``import_plan`` for body-plan importers), whose options are keyword-only parameters
  with defaults: the signature is the list of valid options.

:class:`FormatRegistry` is the one implementation of picking a format (by name, or by
suffix then content), of listing a format's options from its call's signature and of
refusing any other option before any work starts. Each kind keeps its own instance, its
own error class (through ``error(where, reason)``) and its interface's wording
(:class:`Wording`). Declarations are imported on first use, so a format's optional
dependency belongs inside its call.
"""

from __future__ import annotations

import importlib
import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import flag

__all__ = ["ErrorFactory", "Format", "FormatRegistry", "Wording", "call_options", "path_suffixes"]

#: ``error(where, reason)``: the kind's exception; ``where`` is the file (or None).
ErrorFactory = Callable[[str | None, str], Exception]


def call_options(call: Callable[..., Any]) -> tuple[str, ...]:
    """The keyword-only parameters of ``call``, in signature order."""
    parameters = inspect.signature(call).parameters.values()
    return tuple(p.name for p in parameters if p.kind is p.KEYWORD_ONLY)


_REFUSED = object()
_KIND_WORDS = {
    bool: "true or false",
    int: "a whole number",
    float: "a finite number",
    str: "text",
    Path: "a path",
    type(None): "empty",
}


_UNIONS = (typing.Union, types.UnionType)


def _option_types(call: Callable[..., Any]) -> dict[str, tuple[type, ...]]:
    """Each keyword-only option's annotated types (a union's members), where plain.

    Options annotated with anything but ``bool``, ``int``, ``float``, ``str``, ``Path``
    and None (or with nothing) are left out: their call checks them.
    """
    try:
        hints = typing.get_type_hints(call)
    except (NameError, TypeError):
        return {}
    plain = set(_KIND_WORDS)
    out = {}
    for name in call_options(call):
        hint = hints.get(name)
        members = typing.get_args(hint) if typing.get_origin(hint) in _UNIONS else (hint,)
        if members and all(m in plain for m in members):
            out[name] = tuple(members)
    return out


def _as_kind(value: Any, kinds: tuple[type, ...]) -> Any:
    """``value`` as one of ``kinds`` (see :meth:`FormatRegistry.check_values`).

    Only YAML's scalars are checked; any other object (a ``Path``, a mapping given
    through the Python API) passes to the call, which checks it.
    """
    if not isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bool):
        return value if bool in kinds else str(value).lower() if str in kinds else _REFUSED
    if isinstance(value, int) and (int in kinds or float in kinds):
        return value
    if isinstance(value, float) and float in kinds:
        return value if math.isfinite(value) else _REFUSED
    if isinstance(value, str) and (str in kinds or Path in kinds):
        return value
    if isinstance(value, int | float) and str in kinds:
        return str(value)
    return _REFUSED


def path_suffixes(path: str | Path) -> set[str]:
    """The lower-case suffixes a path may be claimed by: the last one and the last two."""
    path = Path(path)
    return {s.lower() for s in path.suffixes[-2:]} | {path.suffix.lower()}


@dataclass(frozen=True, eq=False)
class Format:
    """One registered format.

    Attributes
    ----------
    name : str
        Its ``FORMAT``.
    suffixes : tuple of str
        Its ``SUFFIXES``.
    sniff : callable
        ``sniff(path) -> bool``.
    call : callable
        The kind's call (``read``, ``outputs``, ``import_plan``).
    declaration : module or object
        Where it is declared (kind-specific extras are attributes of it).
    """

    name: str
    suffixes: tuple[str, ...]
    sniff: Callable[[Path], bool]
    call: Callable[..., Any]
    declaration: Any

    def defaults(self) -> dict[str, Any]:
        """Every keyword-only option of the call with its default."""
        parameters = inspect.signature(self.call).parameters.values()
        return {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}


@dataclass(frozen=True)
class Wording:
    """A kind's messages, as ``str.format`` templates.

    Fields the templates may use: ``kind``, ``name`` (the format asked for), ``names``
    (the valid format names), ``formats`` (``"name (.a, .b); ..."``), ``suffixes`` (every
    suffix claimed), ``suffix`` (the file's), ``hint`` (why no format was found),
    ``unknown`` (the unknown option names as a list), ``listed`` and ``quoted`` (the
    same, comma-separated, bare or quoted) and ``valid`` (the valid options,
    comma-separated, or ``none``);
    ``claimed`` / ``unclaimed`` are the ``hint`` when formats claim the suffix (their names
    in ``claimants``) but none recognizes the file, or when none claims it.
    """

    unknown_format: str = "unknown {kind} format {name!r}; valid formats: {formats}"
    unknown_option: str = (
        "the {name} {kind} format has no option(s) {unknown}; valid options: {valid}"
    )
    undetected: str = (
        "cannot tell the {kind} format ({hint}); pass {format_flag}, valid formats: {formats}"
    )
    claimed: str = "formats for its suffix ({claimants}) do not recognize it"
    unclaimed: str = "unknown suffix {suffix!r}"


def _load(entry: str) -> Any:
    module, _, attribute = entry.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attribute) if attribute else found


class FormatRegistry:
    """The formats of one kind, picked by name or by file, their options checked.

    Parameters
    ----------
    kind : str
        What the formats are, for messages (``"tracks"``, ``"export"``).
    entries : sequence of str
        Dotted module names (or ``"module:attribute"``) of the declarations, in sniffing
        priority order.
    call : str
        The attribute holding each format's call.
    error : callable
        ``error(where, reason) -> Exception``: the kind's error.
    wording : Wording
        The kind's messages.
    shared : sequence of str
        Options every format accepts because the kind applies them itself (they are
        valid options but not passed to the call).
    hidden : sequence of str
        Keyword-only parameters of the calls that are not user options (the registry's
        caller fills them, e.g. ``fps``).
    trust_suffix : bool
        When one format alone claims a file's suffix, take it without sniffing (its call
        then reports what is wrong with the file); otherwise every candidate is sniffed.
    """

    def __init__(
        self,
        kind: str,
        entries: Sequence[str],
        *,
        call: str,
        error: ErrorFactory,
        wording: Wording | None = None,
        shared: Sequence[str] = (),
        hidden: Sequence[str] = (),
        trust_suffix: bool = False,
    ) -> None:
        self.kind = kind
        self.entries = tuple(entries)
        self.call = call
        self.error = error
        self.wording = wording or Wording()
        self.shared = tuple(shared)
        self.hidden = tuple(hidden)
        self.trust_suffix = trust_suffix

    def formats(self) -> dict[str, Format]:
        """The formats by name, in priority order (imports their declarations)."""
        out: dict[str, Format] = {}
        for entry in self.entries:
            found = _load(entry)
            out[found.FORMAT] = Format(
                found.FORMAT,
                tuple(found.SUFFIXES),
                found.sniff,
                getattr(found, self.call),
                found,
            )
        return out

    def names(self) -> tuple[str, ...]:
        """The format names, in priority order."""
        return tuple(self.formats())

    def describe(self) -> str:
        """``"name (.a, .b); ..."``: the formats and their suffixes."""
        return "; ".join(f"{f.name} ({', '.join(f.suffixes)})" for f in self.formats().values())

    def _fields(self, **fields: Any) -> dict[str, Any]:
        formats = self.formats()
        suffixes = dict.fromkeys(s for f in formats.values() for s in f.suffixes)
        return {
            "kind": self.kind,
            "names": ", ".join(formats),
            "formats": self.describe(),
            "suffixes": ", ".join(suffixes),
            "format_flag": flag("format"),
            **fields,
        }

    def fail(self, where: str | Path | None, template: str, **fields: Any) -> Exception:
        """The kind's error for ``template`` filled with :class:`Wording`'s fields."""
        reason = template.format(**self._fields(**fields))
        return self.error(None if where is None else str(where), reason)

    def get(self, name: str, where: str | Path | None = None) -> Format:
        """The format called ``name``; the kind's error listing the valid ones otherwise."""
        formats = self.formats()
        if name not in formats:
            raise self.fail(where, self.wording.unknown_format, name=name)
        return formats[name]

    def options(self, fmt: Format) -> tuple[str, ...]:
        """The format's own options: its call's keyword-only parameters but the hidden."""
        return tuple(n for n in call_options(fmt.call) if n not in self.hidden)

    def valid_options(self, fmt: Format) -> tuple[str, ...]:
        """Every option the kind accepts for ``fmt``, sorted: its own and the shared."""
        return tuple(sorted(set(self.options(fmt)) | set(self.shared)))

    def check_options(
        self, fmt: Format, options: Mapping[str, Any], where: str | Path | None = None
    ) -> dict[str, Any]:
        """``options`` checked before any work: names ``fmt`` takes, values of their types.

        Returns the options as :meth:`check_values` gives them; raises the kind's error
        naming the first unknown option (listing the valid ones) or wrong value.
        """
        unknown = sorted(set(options) - set(self.valid_options(fmt)))
        if unknown:
            raise self.fail(
                where,
                self.wording.unknown_option,
                name=fmt.name,
                unknown=unknown,
                listed=", ".join(unknown),
                quoted=", ".join(map(repr, unknown)),
                valid=", ".join(self.valid_options(fmt)) or "none",
            )
        return self.check_values(fmt, options, where)

    def check_values(
        self, fmt: Format, options: Mapping[str, Any], where: str | Path | None = None
    ) -> dict[str, Any]:
        """``options`` of ``fmt``'s own with values of the types its call declares.

        Values come parsed as YAML scalars (``-O name=value``): a ``bool`` option takes
        only true or false, an ``int`` one only a whole number, a ``float`` one a finite
        number; a number given where the call takes text becomes that text (a name
        ``0``). Options the call does not annotate, the shared ones and values that are
        not YAML scalars pass unchanged.

        Raises
        ------
        Exception
            The kind's error naming the option, its value and what it takes.
        """
        hints = _option_types(fmt.call)
        out = dict(options)
        for name, value in options.items():
            kinds = hints.get(name)
            if kinds is None or value is None and type(None) in kinds:
                continue
            checked = _as_kind(value, kinds)
            if checked is _REFUSED:
                takes = " or ".join(_KIND_WORDS.get(k, k.__name__) for k in kinds)
                raise self.error(
                    None if where is None else str(where),
                    f"option {name!r}: {value!r} is not {takes}",
                )
            out[name] = checked
        return out

    def detect(self, path: str | Path) -> tuple[Format | None, list[Format]]:
        """The format of ``path`` by suffix, then content; and the formats claiming its suffix.

        Returns ``(None, claimants)`` when no format recognizes the file.
        """
        path = Path(path)
        formats = self.formats().values()
        suffixes = path_suffixes(path)
        claimants = [f for f in formats if suffixes & set(f.suffixes)]
        if self.trust_suffix and len(claimants) == 1:
            return claimants[0], claimants
        for fmt in claimants:
            if fmt.sniff(path):
                return fmt, claimants
        for fmt in formats:
            if fmt not in claimants and fmt.sniff(path):
                return fmt, claimants
        return None, claimants

    def pick(self, path: str | Path, format: str | None = None) -> Format:
        """The format named ``format``, else the one :meth:`detect` finds.

        Raises
        ------
        Exception
            The kind's error: an unknown ``format``, or a file no format recognizes (the
            message lists the formats and their suffixes).
        """
        if format is not None:
            return self.get(format, path)
        found, claimants = self.detect(path)
        if found is not None:
            return found
        fields = {
            "claimants": ", ".join(f.name for f in claimants),
            "suffix": Path(path).suffix,
        }
        template = self.wording.claimed if claimants else self.wording.unclaimed
        hint = template.format(**self._fields(**fields))
        raise self.fail(path, self.wording.undetected, hint=hint, **fields)
