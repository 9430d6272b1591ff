"""numba's disk cache for a package's kernels, stamped with all the sources they are built from.

numba stamps the cache of a ``cache=True`` function with a hash of the one file
that defines it. A kernel's cached build also holds the functions it calls or inlines from
other files and the module-level constants it reads from them (numba freezes globals at
compile time), so after an edit to those files alone numba keeps loading the old build
(numba issue 1833; a benchmark A/B once measured old code this way).

:func:`stamp_package` makes numba stamp the cache of every function defined in a package's
own modules with one hash, :func:`package_sources`' files: the package's ``*.py`` and the
project modules that its modules other than ``__init__.py`` import (for the compiled
solver: ``pipeline/solve/rules.py``, ``pipeline/kinematics/plan_arrays.py``, ...). An edit to any
of them recompiles the package's kernels at their next use; unchanged sources load as before.

It does so through numba's own locator mechanism (``CacheImpl._locator_classes``): three
locators, numba's ``NUMBA_CACHE_DIR``, in-tree ``__pycache__`` and user-wide ones with
only the stamp changed, are put first; they take the functions of stamped packages only and
otherwise defer to numba's, in numba's order (so a read-only install falls back to the
user-wide directory as numba does; ``NUMBA_CACHE_LOCATOR_CLASSES``, if set, overrides them
as it overrides numba's). Cache file names and places are numba's: a recompiled function
overwrites its index and data files, and after a function of a package is saved, the index
files of another stamp in its cache directory (with their data files) are pruned once per
process, so old builds (including those left by functions that moved to another line) do not
accumulate.

The locators and the index layout are numba internals, tested with the numba versions of
:data:`SUPPORTED_NUMBA` (the range ``pyproject.toml`` pins); importing this module with
another numba raises :class:`~pipeline.errors.DependencyError` (:func:`check_numba`).
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numba
from numba.core.caching import (
    CacheImpl,
    InTreeCacheLocator,
    UserProvidedCacheLocator,
    UserWideCacheLocator,
)

from pipeline.errors import DependencyError
from pipeline.provenance.hashing import new_digest

__all__ = ["SUPPORTED_NUMBA", "check_numba", "package_sources", "stamp_package"]

#: The numba versions this module is tested with: ``(major, minor)`` releases, as
#: ``pyproject.toml``'s requirement ``numba>=0.68,<0.69`` states them.
SUPPORTED_NUMBA: tuple[tuple[int, int], ...] = ((0, 68),)


def check_numba(version: str | None = None) -> None:
    """Raise unless numba ``version`` (default: the installed one) is supported.

    Parameters
    ----------
    version : str, optional
        A numba version string such as ``"0.68.1"`` (default: ``numba.__version__``).

    Raises
    ------
    DependencyError
        The version is not one of :data:`SUPPORTED_NUMBA`'s releases: the message names the
        installed and the supported versions and the command that installs a supported one.
    """
    version = numba.__version__ if version is None else version
    found = re.match(r"(\d+)\.(\d+)", version)
    if found and (int(found[1]), int(found[2])) in SUPPORTED_NUMBA:
        return
    supported = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED_NUMBA)
    lo, hi = min(SUPPORTED_NUMBA), max(SUPPORTED_NUMBA)
    spec = f"numba>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"
    raise DependencyError(
        f"numba {version} is installed, but kinefit's compiled solver supports numba "
        f"{supported} only (its kernel cache relies on numba internals tested there); "
        f"install a supported one: pip install '{spec}'"
    )


check_numba()

#: Directory of each stamped package: its dotted name.
_PACKAGES: dict[str, str] = {}
#: Cache directories pruned in this process.
_PRUNED: set[Path] = set()


def stamp_package(name: str) -> None:
    """Stamp numba's cache of the functions defined in package ``name`` with its sources.

    Call it from the package's ``__init__.py`` before any module of the package defines a
    ``cache=True`` function (numba picks a function's cache when it is decorated). It only
    records the package and, once per process, puts this module's locators in front of
    numba's; it reads no file (that happens when the first function is decorated).

    Parameters
    ----------
    name : str
        The package's ``__name__`` (imported or being imported).
    """
    _PACKAGES[_directory(sys.modules[name].__file__)] = name
    if _LOCATORS[0] not in CacheImpl._locator_classes:
        CacheImpl._locator_classes[:0] = _LOCATORS


def package_sources(name: str) -> tuple[Path, ...]:
    """The files whose contents stamp the cache of a package's functions.

    Parameters
    ----------
    name : str
        A dotted package name; its modules are found on disk, not imported.

    Returns
    -------
    tuple of Path
        The package's ``*.py`` (not its subpackages), then the modules of the same top-level
        package that its modules other than ``__init__.py`` import, at any depth of their
        code (one level: not what those import in turn), sorted.
    """
    return tuple(map(Path, _sources(name)))


def _sources(name: str) -> tuple[str, ...]:
    """:func:`package_sources` as strings (os functions: this runs for every function)."""
    directory = _directory(sys.modules[name].__file__)
    own = sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".py"))
    return (*own, *_imported(name, tuple(own), tuple(map(_signature, own))))


@functools.cache
def _directory(py_file: str) -> str:
    """The real directory of a file."""
    return os.path.dirname(os.path.realpath(py_file))


#: An import statement at the start of a line: ``from`` base and names, or ``import`` modules.
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n;]*)|import[ \t]+([^\n;]*))",
    re.MULTILINE,
)


def _words(names: str) -> list[str]:
    """The imported names of ``a as b, c`` or of a parenthesized list with comments."""
    names = re.sub(r"#[^\n]*", "", names).strip("()")
    return [item.split()[0] for item in names.split(",") if item.split()]


@functools.lru_cache(maxsize=16)
def _imported(name: str, own: tuple[str, ...], _key: tuple[Any, ...]) -> tuple[str, ...]:
    """:func:`package_sources` outside the package (``_key``: the files' sizes and times).

    Import statements are found by a pattern, not parsed (parsing costs 0.1 s a process): a
    line of a docstring that reads like one adds a file, which costs a needless recompile
    at most.
    """
    root = Path(own[0]).parents[name.count(".") + 1]
    top = name.partition(".")[0]
    package = name.split(".")
    found: set[str] = set()
    for path in map(Path, own):
        if path.name == "__init__.py":
            continue
        for base, names, modules in _IMPORT.findall(path.read_text("utf-8")):
            if modules:
                candidates = _words(modules)
            else:
                level = len(base) - len(base.lstrip("."))
                if level:  # relative to the module's package
                    anchor = package[: len(package) - level + 1]
                    base = ".".join([*anchor, base[level:]] if base[level:] else anchor)
                candidates = [base, *(f"{base}.{n}" for n in _words(names))]
            for module in candidates:
                if module.partition(".")[0] != top:
                    continue
                stem = root.joinpath(*module.split("."))
                files = (stem.with_suffix(".py"), stem / "__init__.py")
                found.update(str(p) for p in files if p.is_file())
    return tuple(sorted(found - set(own)))


def _signature(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    return path, st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=16)
def _digest(files: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 of the files' names and contents (keyed on their sizes and times)."""
    h = new_digest()
    h.update(b"kinefit package stamp 1\0")
    for path, _, _ in files:
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def _stamp(directory: str) -> str:
    return _digest(tuple(map(_signature, _sources(_PACKAGES[directory]))))


def _package_of(py_file: str) -> str | None:
    """The stamped package directory that defines ``py_file``, if any."""
    if not py_file.endswith(".py"):
        return None
    directory = _directory(py_file)
    return directory if directory in _PACKAGES else None


def _prune(cache_dir: Path, stamp: str) -> list[Path]:
    """Remove the index files of another stamp in ``cache_dir`` and their data files.

    Only indexes written by this numba version are read (numba's format: the version
    pickled, then the stamp and the overloads pickled); others are left alone, as are files
    that cannot be read or removed (numba ignores a stale index anyway).

    Returns
    -------
    list of Path
        The files removed.
    """
    names = [p.name for p in cache_dir.iterdir()]
    removed = []
    for index in names:
        if not index.endswith(".nbi"):
            continue
        try:
            with open(cache_dir / index, "rb") as f:
                if pickle.load(f) != numba.__version__:
                    continue
                old, _ = pickle.loads(f.read())
        except Exception:  # being written, truncated, unreadable: numba's concern
            continue
        if old == stamp:
            continue
        data = re.compile(re.escape(index.removesuffix(".nbi")) + r"\.\d+\.nbc")
        for name in [index, *filter(data.fullmatch, names)]:
            try:
                (cache_dir / name).unlink()
                removed.append(cache_dir / name)
            except OSError:
                pass
    return removed


class _PackageStamp:
    """Locator mixin: the functions of stamped packages only, stamped with the package.

    Put before one of numba's source-file locators, whose directory it keeps.
    """

    _py_file: str
    _saving = False

    @classmethod
    def from_function(cls, py_func: Callable[..., Any], py_file: str) -> Self | None:
        """A locator for a function of a stamped package, if its directory is writable."""
        if getattr(sys, "frozen", False) or _package_of(py_file) is None:
            return None  # numba's locators take it
        self = super().from_function(py_func, py_file)  # type: ignore[misc]
        if self is not None:
            self._saving = True  # numba ensures the path again before each save
        return self

    def get_source_stamp(self) -> str:
        """The hash of the package's sources (:func:`package_sources`)."""
        return _stamp(_package_of(self._py_file))

    def ensure_cache_path(self) -> None:
        """Check that the directory is writable (numba's); before a save, prune it once."""
        super().ensure_cache_path()  # type: ignore[misc]
        path = Path(self.get_cache_path())  # type: ignore[attr-defined]
        if self._saving and path not in _PRUNED:
            _PRUNED.add(path)
            _prune(path, self.get_source_stamp())


class _UserProvided(_PackageStamp, UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, when set."""


class _InTree(_PackageStamp, InTreeCacheLocator):
    """The package's ``__pycache__``, when writable."""


class _UserWide(_PackageStamp, UserWideCacheLocator):
    """The user's numba cache directory (a read-only install)."""


_LOCATORS = [_UserProvided, _InTree, _UserWide]
