"""Loading a run config: files, layering, CLI overrides, and one-line validation errors.

Re-exported by :mod:`pipeline.config` (``load_run_config``, ``make_run_config``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from pipeline.config.config_files import (
    deep_merge,
    default_config_path,
    load_yaml,
    parse_assignment,
    resolve_paths,
)
from pipeline.config.models import RunConfig
from pipeline.errors import ConfigError

__all__ = ["describe", "load_run_config", "make_run_config"]


def _model_at(model: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    for key in loc:
        field = model.model_fields.get(str(key))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _is_union_tag(part: str) -> bool:
    return part in ("str", "int", "float", "bool", "none") or part.startswith(
        ("function-", "dict[", "list[")
    )


def describe(exc: ValidationError, model: type[BaseModel] = RunConfig) -> str:
    """One line per problem: ``key.path: what is wrong`` (with the valid keys)."""
    return "; ".join(dict.fromkeys(line for _, line in _problems(exc, model)))


def _blame(exc: ValidationError, source: str, given: set[str]) -> str:
    """:func:`describe`, each problem prefixed by where its key came from.

    ``given`` holds the dotted keys set on the command line (``--set``): a problem with one
    of them (or inside one) is the option's, not the file's.
    """
    by_origin: dict[str, list[str]] = {}
    for key, line in _problems(exc, RunConfig):
        mine = any(key == g or key.startswith(f"{g}.") or g.startswith(f"{key}.") for g in given)
        by_origin.setdefault("--set" if mine else source, []).append(line)
    return "; ".join(
        f"{origin}: {'; '.join(dict.fromkeys(lines))}" for origin, lines in by_origin.items()
    )


def _dotted(data: Mapping[str, Any], prefix: str = "") -> set[str]:
    """Dotted keys of the leaves of a nested mapping."""
    keys: set[str] = set()
    for key, value in data.items():
        path = f"{prefix}{key}"
        keys |= _dotted(value, f"{path}.") if isinstance(value, Mapping) and value else {path}
    return keys


def _problems(exc: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    """``(key.path, "key.path: what is wrong")`` for each validation error."""
    lines = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"] if not _is_union_tag(str(p))]
        key = ".".join(loc) or "config"
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            valid = ", ".join(parent.model_fields) if parent else "see kinefit config show"
            message = f"unknown key; valid keys: {valid}"
        elif error["type"] == "missing":
            message = "required key is missing"
        named = message.startswith((f"{key}:", f"{key}."))
        lines.append((key, message if named else f"{key}: {message}"))
    return lines


def _read(source: Path, base: Path) -> dict[str, Any]:
    """A config file's raw mapping with its paths made absolute against ``base``."""
    try:
        data = load_yaml(source)
    except (OSError, yaml.YAMLError) as exc:
        what = " ".join(str(exc).split())  # one line, even for YAML's multi-line marks
        raise ConfigError(f"{source}: cannot read the run config ({what})") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a run config is a YAML mapping of sections")
    return resolve_paths(data, base)


def _merge(data: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``deep_merge``, except that a given ``cluster`` replaces the whole section."""
    merged = deep_merge(data, extra)
    if extra.get("cluster") is not None:
        merged["cluster"] = extra["cluster"]
    return merged


def load_run_config(
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    assignments: Sequence[str] = (),
    *,
    layered: bool = False,
) -> RunConfig:
    """Read, merge and validate a run config.

    Parameters
    ----------
    path : str or Path, optional
        The YAML file; default the built-in :func:`default_config_path` (its relative
        paths are then relative to the current directory).
    overrides : mapping, optional
        Nested settings that replace the file's (CLI options), e.g.
        ``{"outputs": {"root": "out"}}``; relative paths are relative to the current
        directory. ``None`` values are ignored; a ``cluster`` override replaces the
        whole section.
    assignments : sequence of str
        ``key.path=value`` strings (``--set``); values are YAML (``solver.n_iterations=20``).
    layered : bool
        Read ``path`` as changes to the built-in default instead of to the models'
        defaults (``kinefit demo --config``).

    Returns
    -------
    RunConfig
        With every path absolute (URLs untouched).

    Raises
    ------
    ConfigError
        Unreadable file or invalid settings; the message names the file and key paths.
    """
    source = Path(path) if path is not None else default_config_path()
    data = _read(source, source.resolve().parent if path is not None else Path.cwd())
    if layered and path is not None:
        data = _merge(_read(default_config_path(), Path.cwd()), data)
    data = _merge(data, resolve_paths(dict(overrides or {}), Path.cwd()))
    sets = _assignments(assignments)
    if isinstance(data.get("cluster"), str) and isinstance(sets.get("cluster"), Mapping):
        data["cluster"] = {"preset": data["cluster"]}  # --set cluster.x=... edits the preset
    data = deep_merge(data, resolve_paths(sets, Path.cwd()))  # --set edits, never replaces
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_blame(exc, str(source), _dotted(sets))) from None


def make_run_config(
    settings: Mapping[str, Any] | None = None, assignments: Sequence[str] = ()
) -> RunConfig:
    """A run config from the models' own defaults plus ``settings`` (no file).

    Unlike :func:`load_run_config` with no path, this does not start from the demo's
    ``default.yaml`` (whose solver settings are tuned for the mannequin in metres).
    Relative paths are relative to the current directory; ``None`` values are ignored.
    ``assignments`` are ``key.path=value`` strings (``--set``) applied last.

    Raises
    ------
    ConfigError
        Invalid settings, naming the key path.
    """
    sets = _assignments(assignments)
    data = resolve_paths(deep_merge(deep_merge({}, settings or {}), sets), Path.cwd())
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_blame(exc, "settings", _dotted(sets))) from None


def _assignments(assignments: Sequence[str]) -> dict[str, Any]:
    """The nested settings of ``key.path=value`` strings (``--set``)."""
    sets: dict[str, Any] = {}
    for text in assignments:
        sets = deep_merge(sets, parse_assignment(text, "--set"))
    return sets
