"""``pipeline/`` never imports prefect: an AST scan and a clean-import check."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _prefect_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno} {n}"
            for n in names
            if n == "prefect" or str(n).startswith("prefect.")
        ]
    return found


def test_no_module_of_pipeline_imports_prefect():
    files = sorted((ROOT / "pipeline").rglob("*.py"))
    assert len(files) > 30
    offenders = [hit for path in files for hit in _prefect_imports(path)]
    assert not offenders, f"pipeline/ imports prefect: {offenders}"


def test_importing_the_pipeline_leaves_prefect_unloaded():
    modules = [
        "pipeline.fit",
        "pipeline.config",
        "pipeline.archive.discover",
        "pipeline.archive.ingest",
        "pipeline.archive.summary",
        "pipeline.synth.demo",
        "pipeline.export.csv",
        "pipeline.cluster",
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "assert 'prefect' not in sys.modules, 'prefect was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_scan_catches_an_import(tmp_path, monkeypatch):
    bad = ROOT / "pipeline" / "_scan_probe.py"
    try:
        bad.write_text("def f():\n    from prefect import flow\n    return flow\n")
        assert _prefect_imports(bad) == ["pipeline/_scan_probe.py:2 prefect"]
    finally:
        bad.unlink()
