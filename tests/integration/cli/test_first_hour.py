"""What a new user meets in the first hour: every documented path works.

The README's Python blocks run as scripts, the demo's printed commands work in a fresh
shell, the flows used from Python keep Prefect's state in kinefit's home, messages keep
their [brackets], an unwritable output folder is named before any work, and `kinefit fit`
on a raw tracks file says to ingest it first.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.bodyplan import mannequin
from pipeline.synth import SynthConfig, synthesize
from pipeline.synth.demo import _write_csv as write_csv  # the demo's long CSV layout
from tests.fixtures.shared_data import ROOT, SHARED

runner = CliRunner()
KINEFIT = Path(sys.executable).with_name("kinefit")
#: A fresh shell: no activated venv, nothing of kinefit's on the PATH.
FRESH_PATH = "/usr/local/bin:/usr/bin:/bin"


def readme_blocks() -> list[str]:
    """The ```python blocks of the README, in order."""
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory) -> tuple[Path, str]:
    """``kinefit demo`` run once, short, in a checkout-like folder with ../shared beside it.

    Returns the folder (the current directory of the README's blocks) and the output.
    """
    base = tmp_path_factory.mktemp("first-hour")
    (base / "shared").symlink_to(SHARED)
    work = base / "repo"
    work.mkdir()
    env = {**os.environ, "KINEFIT_HOME": str(base / "home")}
    command = [str(KINEFIT), "demo", "--frames", "48", "--workers", "1"]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return work, done.stdout + done.stderr


#: A library's log line: Prefect's format (``12:00:00.000 | INFO    | distributed.worker - ``)
#: or distributed's own (``2026-... - distributed.worker - INFO - ``).
LIBRARY_LOG = re.compile(r"\| (DEBUG|INFO) +\||\b(distributed|prefect)[\w.]* - (DEBUG|INFO) - ")
#: What each README block prints of kinefit's own, in order.
README_PRINTS = ("mean keypoint RMS", "## kinefit archive run")


def test_readme_python_blocks_run_as_scripts(demo_out, tmp_path):
    """Each block runs, prints kinefit's lines and none of Prefect's or distributed's logs."""
    work, _ = demo_out
    blocks = readme_blocks()
    assert len(blocks) == len(README_PRINTS) and any("__main__" in b for b in blocks)
    env = {**os.environ, "KINEFIT_HOME": str(work.parent / "home"), "PYTHONPATH": str(ROOT)}
    for n, block in enumerate(blocks):
        script = tmp_path / f"readme_block_{n}.py"
        script.write_text(block)
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"README block {n}:\n{block}\n{done.stdout}{done.stderr}"
        assert README_PRINTS[n] in done.stdout, f"README block {n}:\n{done.stdout}"
        logs = [
            line for line in (done.stdout + done.stderr).splitlines() if LIBRARY_LOG.search(line)
        ]
        assert not logs, f"README block {n} printed library logs:\n" + "\n".join(logs[:20])


def test_the_demo_prints_commands_that_work_in_a_fresh_shell(demo_out):
    work, output = demo_out
    hints = dict(re.findall(r"^\s+(open a fit|run again):\s+(.*?)(?:\s{2}\(.*)?$", output, re.M))
    assert set(hints) == {"open a fit", "run again"}, output
    env = {"PATH": FRESH_PATH, "HOME": str(work.parent), "KINEFIT_HOME": str(work.parent / "home")}
    for what, command in hints.items():
        done = subprocess.run(
            ["bash", "-c", command], cwd="/", env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{what}: {command}\n{done.stdout}{done.stderr}"
    notebook = re.search(r"^\s+notebook:\s+(make -C \S+ notebook FITS=\S+)$", output, re.M)
    assert notebook and notebook.group(1).endswith(str(work / "kinefit-demo" / "fits")), output
    # dry run (-n) from another folder: the target resolves, and its JupyterLab command
    # line is headless, root-proof and points at the fits (no server is started)
    dry = notebook.group(1).replace("make ", "make -n ", 1)
    done = subprocess.run(
        ["bash", "-c", dry], cwd="/", env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"{dry}\n{done.stdout}{done.stderr}"
    lab = next(line for line in done.stdout.splitlines() if "jupyter lab" in line)
    assert "--no-browser" in lab and "--ip=127.0.0.1" in lab
    assert ("--allow-root" in lab) == (os.geteuid() == 0), lab
    assert f'KINEFIT_FITS_ROOT="{work / "kinefit-demo" / "fits"}"' in lab


def test_flows_used_from_python_keep_prefect_state_in_kinefits_home(tmp_path):
    code = "import os, flows.archive; print(os.environ['PREFECT_HOME'], os.environ['DO_NOT_TRACK'])"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DO_NOT"))}
    env["KINEFIT_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(tmp_path / "home" / "prefect"), "1"]


@pytest.fixture(scope="module")
def tracks_csv(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("brackets")
    synth = synthesize(mannequin(), SynthConfig(n_frames=40), np.random.default_rng(3))
    path = folder / "trial[left].csv"
    write_csv(synth.tracks, path)
    return path


def test_paths_with_brackets_are_printed_as_they_are(tracks_csv, tmp_path):
    out = tmp_path / "br[x].zarr"
    result = runner.invoke(app, ["ingest", str(tracks_csv), "-o", str(out), "--fps", "30"])
    assert result.exit_code == 0, result.output
    assert "br[x].zarr" in result.output
    again = runner.invoke(app, ["ingest", str(tracks_csv), "-o", str(out), "--fps", "30"])
    assert again.exit_code == 1 and "br[x].zarr: already exists" in again.output
    assert "--overwrite" in again.output


def _read_only(folder: Path) -> Path:
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.access(folder, os.W_OK):  # root ignores modes: use a read-only bind of tmpfs
        pytest.skip("cannot make a read-only folder here as this user")
    return folder


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only modes")
def test_an_unwritable_output_folder_is_named_before_any_work(tracks_csv, tmp_path):
    folder = _read_only(tmp_path / "ro_out")
    result = runner.invoke(
        app, ["ingest", str(tracks_csv), "-o", str(folder / "t.zarr"), "--fps", "30"]
    )
    assert result.exit_code == 1
    assert f"cannot write t.zarr in {folder}" in result.output and ".tmp-" not in result.output


def test_an_unwritable_output_folder_as_root_too(tracks_csv, tmp_path):
    """As root, a file where the folder should be makes the folder unwritable for anyone."""
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file, not a folder")
    out = blocker / "t.zarr"
    result = runner.invoke(app, ["ingest", str(tracks_csv), "-o", str(out), "--fps", "30"])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert f"cannot write t.zarr in {blocker}" in text and ".tmp-" not in text
    assert "anything already stored there is unchanged" in text


def test_fit_on_a_raw_tracks_file_says_to_ingest_it_first(tracks_csv, tmp_path):
    result = runner.invoke(
        app, ["fit", str(tracks_csv), "-b", "mannequin", "-o", str(tmp_path / "f.zarr")]
    )
    assert result.exit_code == 1
    assert "read it into one first: kinefit ingest" in " ".join(result.output.split())


def test_version():
    result = runner.invoke(app, ["--version"])
    from pipeline import __version__

    assert result.exit_code == 0 and result.output.strip() == f"kinefit {__version__}"


def test_help_has_no_rst_markup_or_bool_metavars():
    for command in (["fit"], ["ingest"], ["report"], ["reprocess"], ["export", "csv"]):
        text = runner.invoke(app, [*command, "--help"]).output
        assert "``" not in text and "<bool>" not in text, (command, text)


def test_set_errors_are_blamed_on_set(tracks_csv, tmp_path):
    tracks = tmp_path / "t.zarr"  # a real store: fit checks its tracks before its settings
    ingest = runner.invoke(app, ["ingest", str(tracks_csv), "-o", str(tracks), "--fps", "30"])
    assert ingest.exit_code == 0, ingest.output
    result = runner.invoke(
        app,
        ["fit", str(tracks), "-b", "mannequin", "-o", str(tmp_path / "f.zarr"),
         "--set", "solver.n_iterations=0"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "--set: solver.n_iterations: must be a positive integer" in result.output


def test_a_failed_reprocess_prints_kinefits_own_lines_only(tmp_path):
    """No worker tracebacks, no Prefect ERROR lines: the summary names the failure."""
    from tests.fixtures.flows_samples import demo_archive

    demo_archive(tmp_path / "archive", mannequin(), n_frames=40)
    (tmp_path / "archive" / "broken.nc").write_bytes(b"CDF\x01 truncated garbage")
    config = tmp_path / "run.yaml"
    config.write_text(
        f"archive: {{path: {tmp_path / 'archive'}, fps: 60, patterns: ['*.nc', '*.csv'],\n"
        "  options: {up_axis: y}}\n"  # the CSV session records no up axis (else: a warning)
        f"body_plan: mannequin\ncluster: {{mode: local, n_workers: 2}}\n"
        f"outputs: {{root: {tmp_path / 'out'}}}\n"
    )
    env = {**os.environ, "KINEFIT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [str(KINEFIT), "reprocess", "-c", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "failed broken (ingest)" in text and "5 / 0 / 1" in text
    for noise in ("Traceback", "distributed.worker", "| ERROR", "Compute Failed", "warning:"):
        assert noise not in text, text
