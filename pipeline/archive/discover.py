"""Find the sessions of an archive: which raw files are sessions, and what each is called.

An archive is a folder or an fsspec URL (``s3://lab/tracks``, ``memory://x``). Its
sessions are either the files matching :attr:`ArchiveConfig.patterns` (named by file stem
or by relative path, :attr:`ArchiveConfig.naming`), or the entries of a YAML manifest::

    sessions:
      - name: mouse1/day2            # required; becomes fits/mouse1/day2.zarr
        file: raw/m1_d2.h5           # relative to the archive path, or a URL
        format: dlc                  # optional, per session
        fps: 30                      # optional: only if the file has no rate
        options: {unit: mm}          # optional reader options
      - name: rig/trial1             # a multi-camera session: one 2D file per camera
        views: {camA: raw/t1_camA.csv, camB: raw/t1_camB.csv}
        calibration: raw/calibration.toml   # cameras named like the views
        frame_offset: {camB: 2}      # optional: frame 2 of camB's file is frame 0
        options: {unit: mm}          # ``unit``: the calibration's length unit
      - name: mouse1/day3
        file: raw/m1_d3.h5
        individuals: {animal0: mouse1}   # optional: track individual -> identity
                                         # (subject calibration; default: its own name)

With :attr:`ArchiveConfig.camera_regex` (and :attr:`ArchiveConfig.calibration`) set, the
matched files are one 2D file per camera instead, grouped into multi-camera sessions by
name (:mod:`pipeline.archive.camera_sessions`): ``trial1_camA.csv``, ``trial1_camB.csv``
and a ``calibration.toml`` make the session a manifest entry with ``views`` and
``calibration`` would::

    archive:
      path: /data/rig
      patterns: ["**/*.csv"]
      camera_regex: '_(cam[A-Z])$'     # one group: the camera, named as in the calibration
      calibration: calibration.toml    # nearest one beside the files or above them
      naming: relative                 # day1/trial1_camA.csv -> session day1/trial1

Session names become output paths, so they are checked: segments of letters, digits,
``.``, ``_`` and ``-`` separated by ``/``, not starting with a dot, at most 200 bytes
each; never ``..``, never absolute. Names made from file names replace other characters
by ``_``; a manifest name that breaks the rule is an error. :func:`session_store` places
a session's store under an output root and refuses anything that would land outside it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.config import ArchiveConfig
from pipeline.config.config_files import load_yaml
from pipeline.errors import DiscoveryError
from pipeline.tracks.session_names import check_session_name

__all__ = [
    "DiscoveryError",
    "SessionSource",
    "check_archive_folder",
    "check_session_name",
    "discover_sessions",
    "read_manifest",
    "session_store",
    "tracks_sessions",
]

_MANIFEST_KEYS = (
    "name",
    "file",
    "format",
    "fps",
    "options",
    "views",
    "calibration",
    "frame_offset",
    "individuals",
)


@dataclass(frozen=True)
class SessionSource:
    """One session of an archive: where its raw file is and how to read it.

    Attributes
    ----------
    name : str
        Safe session name (``a/b`` with sub-folders).
    url : str
        Local path or fsspec URL of the raw file (or directory, for zarr).
    format : str or None
        Reader name; None: by suffix and content.
    fps : float or None
        Frame rate for files that do not record one.
    options : dict
        Reader options.
    views : dict
        Multi-camera sessions: view (camera) name -> its 2D file (local path or URL);
        empty for a one-file session. ``url`` is then the calibration.
    calibration : str or None
        Multi-camera sessions: the calibration file.
    frame_offset : dict
        Multi-camera sessions: view -> frame of its file that is session frame 0.
    individuals : dict
        Track individual -> identity (subject calibration); others are their own name.
    """

    name: str
    url: str
    format: str | None = None
    fps: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    views: Mapping[str, str] = field(default_factory=dict)
    calibration: str | None = None
    frame_offset: Mapping[str, int] = field(default_factory=dict)
    individuals: Mapping[str, str] = field(default_factory=dict)


def _identities(value: Any, where: str) -> dict[str, str]:
    """A manifest entry's ``individuals``: track name -> identity, one identity per track."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise DiscoveryError(
            f"{where}: individuals: expected a mapping of track individual to identity, "
            "e.g. {animal0: mouse1}"
        )
    seen: dict[str, str] = {}
    for track, identity in value.items():
        check_session_name(identity, f"{where}: individuals: identity of {track!r}")
        if identity in seen:
            raise DiscoveryError(
                f"{where}: individuals: {seen[identity]!r} and {track!r} are both identity "
                f"{identity!r}; one animal cannot be two tracks of one session"
            )
        seen[identity] = track
    return dict(value)


def _sanitize(name: str) -> str:
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "_", p).lstrip(".") or "_" for p in name.split("/")]
    return "/".join(parts)


def session_store(root: str | Path, name: str) -> Path:
    """The store ``<root>/<name>.zarr`` of a session, guaranteed to lie inside ``root``."""
    check_session_name(name)
    root = Path(root).resolve()
    path = (root / f"{name}.zarr").resolve()
    if not path.is_relative_to(root):
        raise DiscoveryError(f"session {name!r} would be written outside {root}")
    return path


def _fs(url: str) -> tuple[Any, str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    return fs, root.rstrip("/")


def _is_local(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


def _full(fs: Any, path: str) -> str:
    """A path from ``fs`` as a string readers and fsspec accept (a URL unless local)."""
    return path if _is_local(fs) else fs.unstrip_protocol(path)


def _stem(relative: str) -> str:
    path = PurePosixPath(relative)
    name = path.name.split(".")[0] or path.name
    return str(path.with_name(name))


def check_archive_folder(archive: ArchiveConfig) -> None:
    """Refuse a local archive path that is not a folder, before a run starts.

    Remote URLs are not looked at (that would mean connecting); discovery checks them.

    Raises
    ------
    DiscoveryError
        The local path does not exist or is a file.
    """
    if "://" in archive.path:
        return
    path = Path(archive.path)
    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "no such archive folder"
        raise DiscoveryError(f"{archive.path}: {what} (the archive's path, --archive)")


def _from_patterns(archive: ArchiveConfig) -> list[SessionSource]:
    fs, root = _fs(archive.path)
    if not fs.isdir(root):
        raise DiscoveryError(f"{archive.path}: no such archive folder")
    found: dict[str, str] = {}
    for pattern in archive.patterns:
        for match in fs.glob(f"{root}/{pattern}"):
            match = match.rstrip("/")
            relative = match[len(root) :].lstrip("/") if match.startswith(root) else ""
            if not relative or ".." in relative.split("/"):
                continue
            found.setdefault(relative, match)
    if archive.camera_regex is not None:
        return _camera_sessions(archive, fs, root, found)
    sessions: dict[str, SessionSource] = {}
    for relative, match in sorted(found.items()):
        stem = _stem(relative)
        name = _sanitize(stem if archive.naming == "relative" else PurePosixPath(stem).name)
        if name in sessions:
            raise DiscoveryError(
                f"{archive.path}: files {sessions[name].url} and {_full(fs, match)} both make "
                f"session {name!r}; use naming: relative or a manifest"
            )
        sessions[name] = SessionSource(
            name, _full(fs, match), archive.format, archive.fps, dict(archive.options)
        )
    return list(sessions.values())


def _camera_sessions(
    archive: ArchiveConfig, fs: Any, root: str, found: dict[str, str]
) -> list[SessionSource]:
    """Multi-camera sessions of the matched files (``archive.camera_regex``)."""
    from pipeline.archive.camera_sessions import camera_sessions

    def name_of(stem: str) -> str:
        return _sanitize(stem if archive.naming == "relative" else PurePosixPath(stem).name)

    files = {relative: _full(fs, match) for relative, match in found.items()}
    return [
        SessionSource(
            s.name,
            s.calibration,
            archive.format,
            archive.fps,
            dict(archive.options),
            views=s.views,
            calibration=s.calibration,
        )
        for s in camera_sessions(archive, fs, root, files, name_of)
    ]


def read_manifest(path: str, archive: ArchiveConfig) -> list[SessionSource]:
    """Read a session manifest (see the module docstring); files relative to the archive.

    Raises
    ------
    DiscoveryError
        Unreadable manifest, unknown keys, unsafe or repeated names; the message names
        the manifest and the entry.
    """
    fs, root = _fs(archive.path)
    location = path if "://" in path or path.startswith("/") else f"{root}/{path}"
    try:
        if _is_local(fs) and "://" not in location:
            data = load_yaml(location)
        else:
            import fsspec

            from pipeline.config.config_files import safe_load

            with fsspec.open(_full(fs, location) if "://" not in location else location) as f:
                data = safe_load(f.read().decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - any unreadable manifest is one clear error
        raise DiscoveryError(f"{location}: cannot read the session manifest ({exc})") from exc
    entries = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or set(data) != {"sessions"}:
        raise DiscoveryError(f"{location}: a manifest is a mapping with one key, sessions: [...]")
    sessions: dict[str, SessionSource] = {}
    for i, entry in enumerate(entries):
        where = f"{location}: sessions[{i}]"
        if not isinstance(entry, dict):
            raise DiscoveryError(f"{where}: expected a mapping with name and file")
        unknown = sorted(set(entry) - set(_MANIFEST_KEYS))
        multi = "views" in entry
        if (
            unknown
            or "name" not in entry
            or ("calibration" not in entry if multi else "file" not in entry)
            or (multi and "file" in entry)
        ):
            raise DiscoveryError(
                f"{where}: needs name and file (or views and calibration, not file, for a "
                f"multi-camera session); unknown keys {unknown}; "
                f"valid keys: {', '.join(_MANIFEST_KEYS)}"
            )
        name = check_session_name(entry["name"], where)
        if name in sessions:
            raise DiscoveryError(f"{where}: session name {name!r} is repeated")
        views = entry.get("views") or {}
        if multi and (not isinstance(views, dict) or not views):
            raise DiscoveryError(f"{where}: views: expected a mapping of camera name to file")
        url = _entry_url(fs, root, entry["calibration"] if multi else entry["file"], where)
        options = {**archive.options, **(entry.get("options") or {})}
        sessions[name] = SessionSource(
            name,
            url,
            entry.get("format", archive.format),
            entry.get("fps", archive.fps),
            options,
            views={str(v): _entry_url(fs, root, f, f"{where}: views") for v, f in views.items()},
            calibration=url if multi else None,
            frame_offset=dict(entry.get("frame_offset") or {}),
            individuals=_identities(entry.get("individuals"), where),
        )
    return list(sessions.values())


def _entry_url(fs: Any, root: str, file: Any, where: str) -> str:
    """A manifest file entry as a path or URL (relative ones inside the archive)."""
    file = str(file)
    if "://" in file or file.startswith("/"):
        return file
    if ".." in file.split("/"):
        raise DiscoveryError(f"{where}: file {file!r} must stay inside the archive")
    return _full(fs, f"{root}/{file}")


def discover_sessions(archive: ArchiveConfig) -> list[SessionSource]:
    """The sessions of an archive, sorted by name.

    Parameters
    ----------
    archive : ArchiveConfig
        ``path`` plus ``patterns`` or ``manifest``.

    Returns
    -------
    list of SessionSource

    Raises
    ------
    DiscoveryError
        No such folder, a bad manifest, or two files that would make the same session;
        with ``camera_regex``: see :func:`pipeline.archive.camera_sessions.camera_sessions`.
    """
    sessions = (
        read_manifest(archive.manifest, archive) if archive.manifest else _from_patterns(archive)
    )
    return sorted(sessions, key=lambda s: s.name)


def tracks_sessions(tracks_root: str | Path) -> dict[str, str]:
    """Session name -> tracks store of every store under ``tracks_root`` (hidden ones not)."""
    root = Path(tracks_root)
    stores = sorted(p for p in root.rglob("*.zarr") if not p.name.startswith("."))
    return {str(p.relative_to(root).with_suffix("")): str(p) for p in stores}
