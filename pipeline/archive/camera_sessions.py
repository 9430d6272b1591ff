"""Multi-camera sessions found by file name: one 2D file per camera, grouped by session.

Used by :func:`pipeline.archive.discover.discover_sessions` when
:attr:`ArchiveConfig.camera_regex <pipeline.config.ArchiveConfig>` is set, the way Anipose's
``cam_regex`` works: the regex is searched in each matched file's stem (its name without
suffixes), its one group is the camera's name, and the stem with the match removed (and
``_``, ``-``, ``.`` or spaces left at its ends stripped) is the session's name. With
``camera_regex: '_(cam[A-Z])$'``, ``day1/trial1_camA.csv`` is camera ``camA`` of session
``trial1`` (``day1/trial1`` with ``naming: relative``).

Each session's calibration is :attr:`ArchiveConfig.calibration`: a URL or absolute path is
the one file of every session; a relative path (``calibration.toml``,
``calib/calibration.toml``) is looked up beside the session's files first (in
``archive.path`` if they are in different folders), then in each folder above them up to
``archive.path``, and the nearest one wins (so one file at the top
serves the whole archive, and a session folder holding its own overrides it, as Anipose's
calibration folders do). Files whose name is the calibration's are never views.

Every calibration is read once at discovery: the views of a session must be cameras of
it, and come out in the calibration's order. Each problem is one
:class:`~pipeline.errors.DiscoveryError` naming the files, the setting and what is valid.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.cameras import read_calibration
from pipeline.config import ArchiveConfig
from pipeline.errors import CameraError, DiscoveryError

__all__ = ["CameraSession", "camera_sessions", "split_camera"]

_ENDS = " _-."


@dataclass(frozen=True)
class CameraSession:
    """One multi-camera session found by file name.

    Attributes
    ----------
    name : str
        Session name (safe, as ``naming`` says).
    views : dict
        Camera name -> its 2D file (local path or URL), in the calibration's camera order.
    calibration : str
        The calibration file (local path or URL).
    """

    name: str
    views: dict[str, str]
    calibration: str


def split_camera(pattern: re.Pattern[str], stem: str) -> tuple[str, str] | None:
    """``(camera, session stem)`` of a file stem, or None if ``pattern`` is not in it.

    The camera is the pattern's one group; the session stem is ``stem`` without the
    match, stripped of ``_``, ``-``, ``.`` and spaces at its ends.
    """
    match = pattern.search(stem)
    if match is None:
        return None
    camera = match.group(1)
    rest = (stem[: match.start()] + stem[match.end() :]).strip(_ENDS)
    return (camera or "", rest)


def _url(fs: Any, path: str) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if protocol in ("file", "local") else fs.unstrip_protocol(path)


def _setting(archive: ArchiveConfig) -> str:
    return f"archive.calibration {archive.calibration!r}"


def _locate(fs: Any, root: str, folder: str, archive: ArchiveConfig, name: str) -> tuple[Any, str]:
    """The nearest calibration of a session whose files are in ``folder`` (fs, path)."""
    setting = str(archive.calibration)
    if "://" in setting or setting.startswith("/"):
        import fsspec

        other, path = fsspec.core.url_to_fs(setting)
        if not other.isfile(path):
            raise DiscoveryError(f"session {name!r}: {_setting(archive)}: no such file")
        return other, path
    parts = PurePosixPath(folder).parts
    tried = []
    for depth in range(len(parts), -1, -1):
        where = "/".join([root, *parts[:depth]])
        tried.append(f"{where}/")
        if fs.isfile(f"{where}/{setting}"):
            return fs, f"{where}/{setting}"
    raise DiscoveryError(
        f"session {name!r}: no calibration: {_setting(archive)} is in none of "
        f"{', '.join(tried)}; put the rig's calibration file there, or set archive.calibration "
        "to its path (relative to archive.path) or URL"
    )


def _cameras(fs: Any, path: str, name: str) -> list[str]:
    """Camera names of a calibration file, in file order."""
    url = _url(fs, path)
    try:
        if url == path:
            return [c.name for c in read_calibration(path)]
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / PurePosixPath(path).name
            local.write_bytes(fs.cat_file(path))
            return [c.name for c in read_calibration(local)]
    except CameraError as exc:  # names the file, the camera and the field
        raise DiscoveryError(f"session {name!r}: calibration {exc}") from exc
    except OSError as exc:
        raise DiscoveryError(f"session {name!r}: calibration {url}: unreadable ({exc})") from exc


def _grouped(
    archive: ArchiveConfig, files: Mapping[str, str], name_of: Callable[[str], str]
) -> dict[str, dict[str, tuple[str, str]]]:
    """Session name -> camera -> (relative, file) of every matched file."""
    pattern = re.compile(str(archive.camera_regex))
    regex = f"archive.camera_regex {archive.camera_regex!r}"
    calibration_name = PurePosixPath(str(archive.calibration)).name
    sessions: dict[str, dict[str, tuple[str, str]]] = {}
    unmatched = []
    for relative, file in sorted(files.items()):
        path = PurePosixPath(relative)
        if path.name == calibration_name:
            continue
        split = split_camera(pattern, path.name.split(".")[0] or path.name)
        if split is None:
            unmatched.append(relative)
            continue
        camera, stem = split
        if not camera or not stem:
            raise DiscoveryError(
                f"{file}: {regex} leaves an empty {'camera' if not camera else 'session'} "
                f"name of this file; its group must match the camera's name and leave the "
                "session's name, e.g. '_cam([A-Z])$' for trial1_camA.csv"
            )
        name = name_of(str(path.with_name(stem)))
        views = sessions.setdefault(name, {})
        if camera in views:
            other = views[camera][0]
            hint = (
                "; with naming: stem, files in different folders share session names: use "
                "naming: relative"
                if PurePosixPath(other).parent != path.parent
                else ""
            )
            raise DiscoveryError(
                f"{archive.path}: files {other} and {relative} are both camera {camera!r} of "
                f"session {name!r} ({regex}){hint}"
            )
        views[camera] = (relative, file)
    if unmatched:
        shown = ", ".join(unmatched[:5]) + (f" (+{len(unmatched) - 5} more)" * (len(unmatched) > 5))
        raise DiscoveryError(
            f"{archive.path}: {shown} match archive.patterns {archive.patterns} but not {regex} "
            "(searched in the file's name without suffixes; its one group is the camera): every "
            "matched file must be one camera's view; narrow archive.patterns or fix the regex"
        )
    return sessions


def camera_sessions(
    archive: ArchiveConfig,
    fs: Any,
    root: str,
    files: Mapping[str, str],
    name_of: Callable[[str], str],
) -> list[CameraSession]:
    """Group an archive's matched files into multi-camera sessions (see the module doc).

    Parameters
    ----------
    archive : ArchiveConfig
        With ``camera_regex`` and ``calibration`` set.
    fs : fsspec.AbstractFileSystem
        The archive's file system.
    root : str
        The archive folder on ``fs``.
    files : mapping of str to str
        Every file matched by ``archive.patterns``: path relative to ``root`` -> its
        local path or URL.
    name_of : callable
        Session name (safe) of a relative session stem (``day1/trial1``), as
        ``archive.naming`` says.

    Returns
    -------
    list of CameraSession
        Sorted by name.

    Raises
    ------
    DiscoveryError
        A file the regex does not match, a camera given twice in one session, a session
        with one camera only, no calibration file, an unreadable calibration, or a camera
        the calibration does not have; nothing is read further.
    """
    found = []
    read: dict[str, list[str]] = {}
    for name, views in sorted(_grouped(archive, files, name_of).items()):
        if len(views) < 2:
            ((camera, (relative, _)),) = views.items()
            raise DiscoveryError(
                f"{archive.path}: session {name!r} has one camera only ({camera}: {relative}); "
                "a multi-camera session needs a file for each of two or more cameras: add the "
                "other cameras' files, or, for single-camera 2D sessions, leave "
                "archive.camera_regex unset (every file is then its own session)"
            )
        folders = {str(PurePosixPath(r).parent) for r, _ in views.values()}
        folder = folders.pop() if len(folders) == 1 else ""
        folder = "" if folder == "." else folder
        cal_fs, path = _locate(fs, root, folder, archive, name)
        url = _url(cal_fs, path)
        if url not in read:
            read[url] = _cameras(cal_fs, path, name)
        cameras = read[url]
        missing = sorted(set(views) - set(cameras))
        if missing:
            listing = ", ".join(f"{c} ({views[c][0]})" for c in missing)
            raise DiscoveryError(
                f"{url}: no camera {listing} of session {name!r}; the calibration's cameras: "
                f"{', '.join(cameras)}; archive.camera_regex {archive.camera_regex!r}'s group "
                "must give the calibration's camera names"
            )
        ordered = {c: views[c][1] for c in cameras if c in views}
        found.append(CameraSession(name, ordered, url))
    return found
