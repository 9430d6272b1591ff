"""Files of the run config: safe YAML loading, merging, ``--set``, paths, shipped configs.

Kept apart from the models in :mod:`pipeline.config`. Only ``yaml.safe_load`` semantics
are used (a :class:`yaml.SafeLoader` subclass that also reads ``1e-6`` as a float, which
plain YAML 1.1 reads as a string).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline.config.pairs import parse_pair
from pipeline.errors import ConfigError

#: Reader options whose values are file paths (resolved like the config's own paths).
PATH_OPTIONS: tuple[str, ...] = ("skeleton_file", "meta")


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that reads ``1e-6`` as a float and refuses repeated keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} is repeated (line {key_node.start_mark.line + 1}); "
                    "YAML would silently keep the last one",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
        r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, plus exponent floats (``1e-6``) and an error on repeated keys."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, keys in their given order (``kinefit config show``)."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file safely; a binary file is a :class:`ConfigError` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a YAML text file (not UTF-8 at byte {exc.start}: a binary file?)"
        ) from None
    return safe_load(text)


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``extra``, recursively for mappings; ``None`` in extra is skipped."""
    out = dict(base)
    for key, value in extra.items():
        if value is None:
            continue
        if isinstance(value, Mapping):  # None values deeper down are skipped too
            out[key] = deep_merge(out[key] if isinstance(out.get(key), Mapping) else {}, value)
        else:
            out[key] = value
    return out


def parse_assignment(text: str, option: str = "--set") -> dict[str, Any]:
    """``"solver.n_iterations=20"`` -> ``{"solver": {"n_iterations": 20}}``.

    The value is read as YAML (numbers, booleans, lists), or taken as text if it is not
    valid YAML; an empty value is ``None`` (the setting's default).
    """
    key, value = parse_pair(text, option, key="path", allow_empty=True, form="key.path=value")
    out: Any = yaml_value(value) if value else None
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def yaml_value(text: str) -> Any:
    """``text`` read as a YAML value (``"20"`` -> 20, ``"[a, b]"`` -> a list), else as is.

    Text that is not valid YAML (a cron such as ``*/10 * * * *``) is kept as text.
    """
    try:
        return safe_load(text)
    except yaml.YAMLError:
        return text.strip()


def _is_url(value: str) -> bool:
    return "://" in value or value.startswith("simplecache::")


def _shipped_name(value: Any, base: Any) -> bool:
    """``value`` names a shipped plan or ``auto`` (and no file beside the config)."""
    from pipeline.bodyplan.library import SHIPPED

    names = (*SHIPPED, "auto")
    return isinstance(value, str) and value in names and not (Path(base) / value).exists()


def _absolute(value: Any, base: Path) -> Any:
    if not isinstance(value, str) or not value or _is_url(value):
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def resolve_paths(data: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """Make the config's file paths absolute against ``base`` (raw, unvalidated data).

    Touched: ``archive.path``, path-valued reader options, ``body_plan`` (unless
    a shipped plan or ``auto``), ``keypoint_map`` (a file), ``ik_setup`` files,
    ``outputs.{root,tracks,fits,report}`` and a cluster preset given as a YAML file. URLs
    and anything of an unexpected type are left for validation to report.
    """
    out = dict(data)
    archive = out.get("archive")
    if isinstance(archive, Mapping):
        archive = dict(archive)
        archive["path"] = _absolute(archive.get("path"), base) if "path" in archive else None
        if archive["path"] is None:
            del archive["path"]
        options = archive.get("options")
        if isinstance(options, Mapping):
            archive["options"] = {
                k: _absolute(v, base) if k in PATH_OPTIONS else v for k, v in options.items()
            }
        out["archive"] = archive
    if "body_plan" in out and not _shipped_name(out["body_plan"], base):
        out["body_plan"] = _absolute(out["body_plan"], base)
    if "keypoint_map" in out:
        out["keypoint_map"] = _absolute(out["keypoint_map"], base)
    setups = out.get("ik_setup")
    if isinstance(setups, str):
        out["ik_setup"] = _absolute(setups, base)
    elif isinstance(setups, Mapping):
        setups = dict(setups)
        if "archive" in setups:
            setups["archive"] = _absolute(setups["archive"], base)
        if isinstance(setups.get("sessions"), Mapping):
            setups["sessions"] = {k: _absolute(v, base) for k, v in setups["sessions"].items()}
        out["ik_setup"] = setups
    outputs = out.get("outputs")
    if isinstance(outputs, Mapping):
        out["outputs"] = {
            k: _absolute(v, base) if k in ("root", "tracks", "fits", "report") else v
            for k, v in outputs.items()
        }
    cluster = out.get("cluster")
    preset = cluster.get("preset") if isinstance(cluster, Mapping) else cluster
    if isinstance(preset, str) and preset.endswith((".yaml", ".yml")):
        resolved = _absolute(preset, base)
        out["cluster"] = (
            {**cluster, "preset": resolved} if isinstance(cluster, Mapping) else resolved
        )
    return out


def config_dir() -> Path:
    """The folder of the shipped configs (``default.yaml``, ``cluster/*.yaml``).

    Package data of :mod:`pipeline.config` (``pipeline/config/shipped/``), so an installed
    kinefit has them as well as a checkout.
    """
    return Path(__file__).resolve().parent / "shipped"


def default_config_path() -> Path:
    """The built-in run config (the demo's defaults)."""
    return config_dir() / "default.yaml"


def cluster_presets() -> dict[str, Path]:
    """Cluster presets by name (``pipeline/config/shipped/cluster/<name>.yaml``)."""
    return {p.stem: p for p in sorted((config_dir() / "cluster").glob("*.yaml"))}


def load_preset(preset: Any) -> dict[str, Any]:
    """The settings of a cluster preset: a name from :func:`cluster_presets` or a YAML file."""
    presets = cluster_presets()
    if isinstance(preset, str) and preset in presets:
        path = presets[preset]
    elif isinstance(preset, str) and preset.endswith((".yaml", ".yml")) and Path(preset).is_file():
        path = Path(preset)
    else:
        raise ConfigError(
            f"unknown cluster preset {preset!r}; valid presets: {', '.join(presets)} "
            "(or a YAML file of cluster settings)"
        )
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a cluster preset is a YAML mapping")
    return data
