"""notebooks/inspect_fit.ipynb executes top to bottom on a freshly made archive."""

import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tests.fixtures.image_plane_fit import image_fit  # noqa: F401 (fixture)

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "inspect_fit.ipynb"


def _execute(fits_root: Path, tmp_path: Path, monkeypatch) -> list:
    """Run the notebook on the archive ``fits_root``; every cell's outputs, in order."""
    # a kernel spec for this very interpreter (a fresh .venv has none that points at it)
    spec = tmp_path / "jupyter" / "kernels" / "kinefit-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "kinefit tests", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("KINEFIT_FITS_ROOT", str(fits_root))
    monkeypatch.setenv("MPLBACKEND", "agg")  # the notebook's %matplotlib inline overrides it
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="kinefit-test",
        timeout=300,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def test_notebook_executes_on_a_fresh_archive(fits_root, tmp_path, monkeypatch):
    outputs = _execute(fits_root, tmp_path, monkeypatch)
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "median_rms" in html and "walk" in html  # the summary table was shown
    # the viewer cell: one plotly figure, animated, its skeleton drawn from the fit
    figures = [
        o["data"]["application/vnd.plotly.v1+json"]
        for o in outputs
        if o.get("data") and "application/vnd.plotly.v1+json" in o["data"]
    ]
    assert len(figures) == 1 and len(figures[0]["frames"]) > 10
    assert any(t.get("meta", {}).get("kinefit") == "skeleton" for t in figures[0]["data"])
    text = "".join(o.get("text", "") for o in outputs)
    assert "session 'walk'" in text  # the worst session was selected
    assert list(tmp_path.iterdir()) == [tmp_path / "jupyter"]  # it wrote nothing


def test_notebook_draws_a_single_view_2d_fit(image_fit, tmp_path, monkeypatch):  # noqa: F811
    """Real DeepLabCut tracks fitted on the image plane: every cell runs, the skeleton
    figure and the viewer are drawn, and the notebook names what one view cannot see."""
    outputs = _execute(image_fit.parent, tmp_path, monkeypatch)
    assert not [o for o in outputs if o.output_type == "error"]
    assert len([o for o in outputs if "image/png" in o.get("data", {})]) >= 3
    figures = [
        o["data"]["application/vnd.plotly.v1+json"]
        for o in outputs
        if o.get("data") and "application/vnd.plotly.v1+json" in o["data"]
    ]
    assert len(figures) == 1
    assert figures[0]["layout"]["scene"]["camera"]["projection"]["type"] == "orthographic"
    text = "".join(o.get("text", "") for o in outputs)
    assert "session 'openfield'" in text
    assert "not observable from its views: root_position/z" in text
