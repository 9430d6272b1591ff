"""A cached kernel is reused only while none of its package's sources changed.

numba alone stamps a function's disk cache with the file that defines it, so an edit to a
callee in another file (or to a constant it reads) left the old build loading.
:mod:`pipeline.solve.kernel_cache` stamps a package's functions with all its sources;
these tests build a tiny package the way ``pipeline.solve.compiled`` is built and run it in
fresh processes, as a developer switching branches would.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numba.core.dispatcher
import pytest

import pipeline.solve.compiled
from pipeline.errors import DependencyError, KinefitError
from pipeline.solve import kernel_cache as caching

# make check skips it: each test compiles kernels in a fresh cache
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PACKAGE = "kinefit_cache_probe"

RUN = f"""
import json
from {PACKAGE}.kern.a import kernel
value = kernel()
print(json.dumps([value, sum(kernel.stats.cache_hits.values()),
                  sum(kernel.stats.cache_misses.values()), kernel.stats.cache_path]))
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _package(root: Path, stamped: bool = True) -> Path:
    """``kern``: a.kernel inlines b.inlined, calls b.called, reads consts.OFFSET (outside)."""
    _write(root / PACKAGE / "__init__.py", "")
    _write(root / PACKAGE / "consts.py", "OFFSET = 3\n")
    _write(
        root / PACKAGE / "kern" / "__init__.py",
        "from pipeline.solve.kernel_cache import stamp_package\n\nstamp_package(__name__)\n"
        if stamped
        else "",
    )
    _write(
        root / PACKAGE / "kern" / "b.py",
        """\
        import numba as nb


        @nb.njit(cache=True, inline="always")
        def inlined():
            return 1


        @nb.njit(cache=True)
        def called():
            return 2
        """,
    )
    _write(
        root / PACKAGE / "kern" / "a.py",
        f"""\
        import numba as nb

        from {PACKAGE}.consts import OFFSET
        from {PACKAGE}.kern.b import called, inlined


        @nb.njit(cache=True)
        def kernel():
            return 100 * inlined() + 10 * called() + OFFSET
        """,
    )
    return root / PACKAGE / "kern"


def _run(root: Path, cache_dir: Path | None) -> tuple[int, int, int, Path]:
    """``kernel()``, its cache hits and misses and cache directory, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    # -B: no .pyc, whose mtime-and-size check could miss a same-size edit in the same second
    done = subprocess.run(
        [sys.executable, "-B", "-c", RUN], env=env, cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    value, hits, misses, path = json.loads(done.stdout.splitlines()[-1])
    return value, hits, misses, Path(path)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _files(cache: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in cache.iterdir() if p.suffix in (".nbi", ".nbc")}


def test_an_edit_to_another_file_recompiles_the_kernel_and_only_that(tmp_path):
    src = tmp_path / "src"
    kern = _package(src)
    assert _run(src, None)[:3] == (123, 0, 1)  # compiled and saved
    saved = _files(kern / "__pycache__")
    assert any(n.startswith("a.kernel-") and n.endswith(".nbc") for n in saved)
    # unchanged sources: loaded from the cache, nothing written
    assert _run(src, None) == (123, 1, 0, kern / "__pycache__")
    assert _files(kern / "__pycache__") == saved

    # a.py untouched: numba alone would load the stale 123 from a.py's cache entry
    _edit(kern / "b.py", "return 1", "return 4")
    value, hits, misses, _ = _run(src, None)
    assert value != 123
    assert (value, hits, misses) == (423, 0, 1)
    _edit(kern / "b.py", "return 2", "return 5")  # the called (not inlined) function
    assert _run(src, None)[:3] == (453, 0, 1)
    _edit(src / PACKAGE / "consts.py", "3", "7")  # a constant from outside the package
    assert _run(src, None)[:3] == (457, 0, 1)

    # the kernel moves down a line: its new files replace the old ones, which are pruned
    before = {n for n in _files(kern / "__pycache__") if n.startswith("a.kernel-")}
    _edit(kern / "a.py", "@nb.njit", "\n@nb.njit")
    assert _run(src, None)[:3] == (457, 0, 1)
    after = {n for n in _files(kern / "__pycache__") if n.startswith("a.kernel-")}
    assert len(after) == len(before) and after.isdisjoint(before)
    assert _run(src, None)[:3] == (457, 1, 0)


def test_numba_cache_dir_is_respected_and_stamped(tmp_path):
    kern = _package(tmp_path / "src")
    assert _run(tmp_path / "src", tmp_path / "cache")[:3] == (123, 0, 1)
    _edit(kern / "b.py", "return 1", "return 4")
    value, hits, misses, cache = _run(tmp_path / "src", tmp_path / "cache")
    assert (value, hits, misses) == (423, 0, 1)
    assert cache.parent == tmp_path / "cache" and not (kern / "__pycache__").exists()
    assert _run(tmp_path / "src", tmp_path / "cache")[:3] == (423, 1, 0)


def test_numba_alone_keeps_the_stale_kernel(tmp_path):
    """The hazard the stamp removes (if this fails, numba itself now notices the edit)."""
    kern = _package(tmp_path, stamped=False)
    assert _run(tmp_path, None)[:3] == (123, 0, 1)
    _edit(kern / "b.py", "return 1", "return 4")
    assert _run(tmp_path, None)[:3] == (123, 1, 0)  # stale


def test_a_package_without_a_writable_pycache_caches_in_the_user_directory(tmp_path, monkeypatch):
    """As numba's locators do for a read-only install (here ``__pycache__`` is a file)."""
    kern = _package(tmp_path / "src")
    (kern / "__pycache__").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    assert _run(tmp_path / "src", None)[:3] == (123, 0, 1)
    _edit(kern / "b.py", "return 1", "return 4")
    value, hits, misses, cache = _run(tmp_path / "src", None)
    assert (value, hits, misses) == (423, 0, 1)
    assert tmp_path / "user-cache" in cache.parents


#: The packages with numba kernels (``cache=True``) and every module of them.
KERNEL_PACKAGES = ("pipeline.solve.compiled", "pipeline.solve.temporal")


def test_every_cached_kernel_of_the_compiled_package_is_stamped():
    directory = Path(pipeline.solve.compiled.__file__).parent
    import_all = [
        importlib.import_module(f"{package}.{p.stem}")
        for package in KERNEL_PACKAGES
        for p in Path(importlib.import_module(package).__file__).parent.glob("*.py")
        if p.stem != "__init__"
    ]
    kernels = {
        f"{m.__name__}.{name}": obj
        for m in import_all
        for name, obj in vars(m).items()
        if isinstance(obj, numba.core.dispatcher.Dispatcher)
        and obj.py_func.__module__ == m.__name__
    }
    assert len(kernels) > 20
    unstamped = [
        name
        for name, k in kernels.items()
        if not isinstance(k._cache._impl.locator, caching._PackageStamp)  # numba internals
    ]
    assert unstamped == []
    sources = {
        p.relative_to(directory.parents[2]).as_posix()
        for p in caching.package_sources("pipeline.solve.compiled")
    }
    # the kernels freeze constants of these modules
    assert {"pipeline/solve/rules.py", "pipeline/kinematics/plan_arrays.py"} <= sources
    assert "pipeline/solve/compiled/normal.py" in sources
    assert {"pipeline/solve/rules.py", "pipeline/solve/temporal/motion_model.py"} <= {
        p.relative_to(directory.parents[2]).as_posix()
        for p in caching.package_sources("pipeline.solve.temporal")
    }
    assert any(name.startswith("pipeline.solve.temporal.marginal.") for name in kernels)


def test_the_installed_numba_is_supported_and_pinned_to_the_same_range():
    import tomllib

    caching.check_numba()  # the module imported, so the installed numba passed
    deps = tomllib.loads((Path(caching.__file__).parents[2] / "pyproject.toml").read_text())
    (pin,) = [d for d in deps["project"]["dependencies"] if d.startswith("numba")]
    lo, hi = min(caching.SUPPORTED_NUMBA), max(caching.SUPPORTED_NUMBA)
    assert pin.replace(" ", "") == f"numba>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"


@pytest.mark.parametrize("version", ["0.68.0", "0.68.1", "0.68.2rc1"])
def test_a_supported_numba_passes_the_check(version):
    caching.check_numba(version)


@pytest.mark.parametrize("version", ["0.67.1", "0.69.0", "1.0.0", "0.6.8", "unknown"])
def test_another_numba_is_named_with_the_supported_range_and_the_fix(version, monkeypatch):
    monkeypatch.setattr(numba, "__version__", version)
    with pytest.raises(DependencyError) as err:
        caching.check_numba()
    message = str(err.value)
    assert f"numba {version} is installed" in message
    assert "0.68.x" in message
    assert "pip install 'numba>=0.68,<0.69'" in message
    assert isinstance(err.value, KinefitError) and isinstance(err.value, ImportError)
