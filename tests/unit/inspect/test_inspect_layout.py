"""pipeline.inspect's rooms: sub-packages by role, no re-export shims, the viewer without
matplotlib, module names that no other folder of pipeline/ uses for something else."""

import ast
from pathlib import Path

import pipeline.inspect

ROOT = Path(__file__).resolve().parents[3]
INSPECT = ROOT / "pipeline" / "inspect"
ROOMS = ("data", "plots", "viewer", "render", "report")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_inspect_is_sub_packages_each_with_a_one_line_docstring_and_nothing_else():
    assert sorted(p.name for p in INSPECT.glob("*.py")) == ["__init__.py"]
    rooms = sorted(p.name for p in INSPECT.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert rooms == sorted(ROOMS)
    for room in ROOMS:
        tree = ast.parse((INSPECT / room / "__init__.py").read_text())
        doc = ast.get_docstring(tree)
        assert doc and "\n" not in doc, room
        assert len(tree.body) == 1, f"{room}/__init__.py re-exports"


def test_no_module_re_exports_what_it_imports():
    for path in INSPECT.rglob("*.py"):
        if path == INSPECT / "__init__.py":
            continue  # the package's public face
        tree = ast.parse(path.read_text())
        imported = {
            alias.asname or alias.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        exported = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                exported = set(ast.literal_eval(node.value))
        assert not exported & imported, f"{path.relative_to(ROOT)} re-exports"


def test_the_plotly_viewer_never_imports_matplotlib():
    modules = {_module(p): p for p in INSPECT.rglob("*.py")}
    seen, todo = set(), [m for m in modules if m.startswith("pipeline.inspect.viewer")]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for target in _imports(modules[name]):
            assert not target.startswith("matplotlib"), f"{name} imports {target}"
            todo += [m for m in modules if m == target and m != "pipeline.inspect"]
    assert not any(m.startswith("pipeline.inspect.plots") for m in seen)
    assert "pipeline.inspect.data.angle_panels" in seen  # shared with the static plots


def test_inspect_module_names_are_used_nowhere_else_in_pipeline():
    others = {
        p.name
        for p in (ROOT / "pipeline").rglob("*.py")
        if INSPECT not in p.parents and p.name != "__init__.py"
    }
    ours = {p.name for p in INSPECT.rglob("*.py") if p.name != "__init__.py"}
    assert ours & others == set()
    assert len(ours) == len([p for p in INSPECT.rglob("*.py") if p.name != "__init__.py"])


def test_the_public_api_still_imports():
    for name in pipeline.inspect.__all__:
        assert getattr(pipeline.inspect, name) is not None, name
