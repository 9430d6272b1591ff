"""The command line fuzzed: a malformed value is one ``error:`` line and exit 1, never exit 2.

Every subcommand of the real typer app is enumerated (a new command fails
:func:`test_every_command_has_a_base_invocation` until it gets one), and each of its
options is given malformed values: text where a number goes, numbers out of range,
``KEY=VALUE`` pairs without ``=`` or with an empty side or repeated names, unknown
names, and paths that do not exist, are folders, are truncated copies of real files from
the shared data or have the wrong suffix. hypothesis draws the invocations (fixed seed,
bounded budget); :data:`CASES` holds the mistakes users reported. Everything runs in
this process (typer's ``CliRunner``), and every base invocation fails at validation or
does small work, so a few hundred invocations take well under two minutes.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from flows.cli import app
from tests.fixtures.shared_data import SHARED

REAL = SHARED / "data" / "realdata"
DLC = REAL / "dlc" / "CollectedData_Mackenzie.csv"
H5 = REAL / "dlc" / "CollectedData_Pranav.h5"
NWB_TWO = REAL / "nwb" / "0.3.0_poseestimation_two_cameras.nwb"
NWB_MIXED = REAL / "nwb" / "0.1.1_poseestimation_nodes_edges.nwb"
TRC = REAL / "unclaimed" / "markers.trc"
C3D = REAL / "c3d" / "Sample_Static.c3d"
CALIB = SHARED / "data" / "pose2sim" / "Calib.toml"
SKELETONS = SHARED / "data" / "kimodo" / "skeletons.json"
URDF = SHARED / "data" / "models" / "urdf" / "double_pendulum_continuous.urdf"
runner = CliRunner()


def commands() -> dict[str, object]:
    """Every leaf command of the app by its path (``"export csv"``)."""
    found: dict[str, object] = {}

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        if not hasattr(command, "commands"):
            found[" ".join(path)] = command

    walk(typer.main.get_command(app), [])
    return found


@dataclass(frozen=True)
class Inputs:
    tmp: Path
    tracks: Path  # a tracks store (real DLC file)
    walk: Path  # synthetic mannequin tracks, mapped to the mannequin
    fit: Path  # a fit store
    folder: Path
    missing: Path
    truncated: tuple[Path, ...]
    wrong_suffix: Path
    plain: Path  # an existing plain file, not a store


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, archive_root) -> Inputs:
    tmp = tmp_path_factory.mktemp("fuzz")
    tracks = tmp / "dlc.zarr"
    done = runner.invoke(app, ["ingest", str(DLC), "-o", str(tracks), "--fps", "30"])
    assert done.exit_code == 0, done.output
    truncated = []
    for source in (H5, DLC, NWB_TWO, SKELETONS, TRC):
        data = source.read_bytes()
        cut = tmp / f"cut_{source.name}"
        cut.write_bytes(data[: len(data) // 3])
        truncated.append(cut)
    wrong = tmp / "tracks.c3d"
    shutil.copy(DLC, wrong)
    (tmp / "folder").mkdir()
    plain = tmp / "plain.txt"
    plain.write_text("not a store\n")
    return Inputs(
        tmp=tmp,
        tracks=tracks,
        walk=archive_root / "tracks" / "walk.zarr",
        fit=archive_root / "fits" / "walk.zarr",
        folder=tmp / "folder",
        missing=tmp / "nosuch.csv",
        truncated=tuple(truncated),
        wrong_suffix=wrong,
        plain=plain,
    )


def bases(i: Inputs) -> dict[str, list[str]]:
    """Per command, an invocation that is valid but for what is fuzzed, and cheap.

    Those that would start real work fail at a late check instead (``fit -o`` an
    existing plain file is refused after every option was checked).
    """
    o = str(i.tmp / "out")
    fit = str(i.fit)
    return {
        "ingest": ["ingest", str(DLC), "-o", f"{o}.zarr", "--fps", "30"],
        "fit": ["fit", str(i.walk), "-o", str(i.plain), "-b", "mannequin"],
        "demo": ["demo", "--out", str(i.plain)],
        "reprocess": ["reprocess", "--archive", str(i.missing)],
        "serve": ["serve", "--config", str(i.missing)],
        "report": ["report", fit, "-o", f"{o}.html"],
        "render": ["render", fit, "-o", str(i.folder / "x.txt")],
        "calibrate": ["calibrate", str(i.tracks), "-b", "mannequin", "-o", f"{o}.json"],
        "ik": ["ik", str(i.missing)],
        "export kimodo": [
            *["export", "kimodo", fit, "--skeleton-file", str(SKELETONS)],
            "-o",
            f"{o}.json",
        ],
        "export csv": ["export", "csv", fit, "-o", f"{o}.csv"],
        "export bvh": ["export", "bvh", fit, "-o", f"{o}.bvh"],
        "export trc": ["export", "trc", fit, "-o", f"{o}.trc"],
        "export mot": ["export", "mot", fit, "-o", f"{o}.mot"],
        "export nwb": ["export", "nwb", fit, "-o", f"{o}.nwb"],
        "export qpos": ["export", "qpos", fit, "-o", f"{o}.npz"],
        "export movement": ["export", "movement", fit, "-o", f"{o}.nc"],
        "config show": ["config", "show"],
        "body-plan show": ["body-plan", "show", "mannequin"],
        "body-plan validate": ["body-plan", "validate", "mannequin"],
        "body-plan convert": ["body-plan", "convert", str(URDF), "-o", str(i.folder)],
        "body-plan edit": ["body-plan", "edit", "mannequin", "-o", f"{o}.json"],
        "body-plan combine": ["body-plan", "combine", "mannequin", "-o", f"{o}.json"],
        "body-plan map": ["body-plan", "map", str(i.tracks), "mannequin"],
        "body-plan list": ["body-plan", "list"],
    }


#: Commands whose valid runs are heavy (a Prefect server, an archive run, a calibration):
#: only what is refused before any work is fuzzed there (click's types, --set, --config).
HEAVY = {"demo", "reprocess", "serve", "calibrate"}
#: Options not fuzzed: flags, and those whose every text is valid (names, free text).
SKIP = {"verbose", "help", "text", "name", "timezone", "scheduler", "prefix"}


def bad_values(param, i: Inputs) -> list[list[str]]:
    """Malformed values for one option, as argument lists (repeated names included)."""
    kind = param.bare_type() if callable(param.bare_type) else str(param.bare_type)
    flag = param.opts[0]
    paths = [i.missing, i.folder, i.wrong_suffix, *i.truncated]
    if kind == "int":
        values = ["abc", "1.5", "-7", "99999999999999999999", ""]
    elif kind == "float":
        values = ["abc", "nan", "-1", "inf", ""]
    elif kind == "Path":
        values = [str(p) for p in paths]
    elif param.multiple:
        values = ["noequals", "=value", "key=", "nosuch=1", "a..b=1"]
        return [[flag, v] for v in values] + [[flag, "k=1", flag, "k=2"]]
    else:
        values = ["", "nosuch", "=x", "../x", "1e999"]
    return [[flag, v] for v in values]


def fuzz_space(i: Inputs) -> list[tuple[str, list[str]]]:
    out = []
    base = bases(i)
    for path, command in commands().items():
        slot = len(path.split())  # the first argument: a file or store
        if path not in HEAVY and any(p.param_type_name == "argument" for p in command.params):
            for bad in [i.missing, i.folder, i.wrong_suffix, i.plain, *i.truncated]:
                args = list(base[path])
                args[slot] = str(bad)
                out.append((path, args))
        for param in command.params:
            if param.param_type_name != "option" or param.name in SKIP:
                continue
            if getattr(param, "is_flag", False) or param.bare_type() == "bool":
                continue
            typed = param.bare_type() in ("int", "float")
            if path in HEAVY and not (typed or param.name in ("set_", "config")):
                continue
            for bad in bad_values(param, i):
                out.append((path, [*base[path], *bad]))
    return out


def check(args: list[str]) -> None:
    """One invocation: never exit 2; a user error is one ``error:`` line."""
    result = runner.invoke(app, args)
    shown = " ".join(args)
    assert result.exit_code != 2, f"internal error for: kinefit {shown}\n{result.output}"
    assert result.exit_code in (0, 1), f"kinefit {shown}: exit {result.exit_code}"
    if result.exit_code == 1:
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, f"kinefit {shown}: not one error line:\n{result.output}"
        assert "Traceback" not in result.output


def test_every_command_has_a_base_invocation(inputs):
    missing = sorted(set(commands()) - set(bases(inputs)))
    assert not missing, f"add a base invocation for {missing} to bases()"


@pytest.fixture(scope="module")
def space(inputs):
    return fuzz_space(inputs)


def test_the_fuzz_space_covers_every_command(space):
    takes_values = {
        path for path, c in commands().items() if any(p.name not in SKIP for p in c.params)
    }
    assert {path for path, _ in space} == takes_values
    assert len(space) > 300


@pytest.mark.slow  # about 40 s on 2 idle cores; make check skips it, make test runs it
@pytest.mark.timeout(600)
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,  # a fixed seed: the same invocations on every run
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
@given(data=st.data())
def test_malformed_values_are_one_line_and_never_an_internal_error(space, data):
    index = data.draw(st.integers(0, len(space) - 1), label="invocation")
    check(space[index][1])


def _cases(i: Inputs) -> list[tuple[str, list[str], str]]:
    o = str(i.tmp / "case.zarr")
    ingest = ["ingest", str(DLC), "-o", o, "--fps", "30"]
    views = ["ingest", "-o", o, "--calibration", str(CALIB)]
    return [
        ("-O no =", [*ingest, "-O", "unit"], "--option 'unit': expected KEY=VALUE"),
        ("-O empty name", [*ingest, "-O", "=mm"], "the name before '=' is empty"),
        ("-O empty unit", [*ingest, "-O", "unit="], "the value after '=' is empty"),
        ("-O unknown unit", [*ingest, "-O", "unit=furlong"], "valid units: km"),
        ("-O unsafe session", [*ingest, "-O", "session=../x"], "unsafe session name"),
        ("-O unknown option", [*ingest, "-O", "nosuch=1"], "valid options:"),
        ("--to-unit unknown", [*ingest, "--to-unit", "furlong"], "convertible units:"),
        ("--fps not a number", [*ingest[:-1], "abc"], "'--fps'"),
        ("--views without =", [*views, "--views", "camA"], "--views 'camA'"),
        ("--views repeated", [*views, "--views", "camA=a.csv", "camA=b.csv"], "given twice"),
        ("--views no calibration", ["ingest", "-o", o, "--views", "camA=a.csv"], "--calibrat"),
        ("--views missing file", [*views, "--views", "cam01=trial_cam01.csv"], "trial_cam01"),
        ("csv on a .trc", ["ingest", str(TRC), "-o", o, "--format", "csv"], "--format"),
        ("npz on a csv", [*ingest, "--format", "npz"], "not a readable .npz"),
        ("movement on a csv", [*ingest, "--format", "movement"], "not a readable movement"),
        (
            "camera_view on a file without one",
            ["ingest", str(NWB_TWO), "-o", o, "-O", "camera_view=nosuch"],
            "option 'camera_view'",
        ),
        ("truncated HDF5", ["ingest", str(i.truncated[0]), "-o", o], "HDF5"),
        (
            "-O a number as the keypoint map",
            [*ingest, "-O", "keypoint_map=-1"],
            "option 'keypoint_map': -1 is not a keypoint map",
        ),
        (
            "-O a flag that is not true or false",
            ["ingest", str(C3D), "-o", o, "-O", "include_model_outputs=nosuch"],
            "'nosuch' is not true or false",
        ),
        (
            "--scheduler no port",
            ["fit", str(i.walk), "-o", o, "-b", "mannequin", "--scheduler", "nosuch"],
            "not a scheduler address",
        ),
        ("--worst negative", ["report", str(i.fit), "--worst", "-1"], "'--worst'"),
        ("serve --port out of range", ["serve", "--port", "99999999"], "'--port'"),
        ("render to .txt", ["render", str(i.fit), "-o", str(i.tmp / "r.txt")], ".mp4"),
        ("export to a wrong suffix", ["export", "nwb", str(i.fit), "-o", f"{o}.csv"], ".nwb"),
        ("convert into a folder", bases(i)["body-plan convert"], "is a folder"),
        (  # its own path: fuzzed output options may have written i.missing meanwhile
            "reprocess no archive",
            ["reprocess", "--archive", str(i.missing.parent / "no-archive-here")],
            "no such archive",
        ),
        ("no such command", ["nosuch"], "No such command 'nosuch'"),
        ("unknown option", ["export", "csv", str(i.fit), "--nosuch"], "--nosuch"),
    ]


CASE_NAMES = [c[0] for c in _cases(Inputs(*(Path("."),) * 6, (Path("."),), Path("."), Path(".")))]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_reported_mistakes_are_one_line_naming_the_option(inputs, name):
    (args, fragment) = next((a, f) for n, a, f in _cases(inputs) if n == name)
    result = runner.invoke(app, args)
    assert result.exit_code == 1, (name, result.output)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert fragment in errors[0], errors[0]
    assert not (inputs.tmp / "case.zarr").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_an_unreadable_file_is_named(inputs):
    locked = inputs.tmp / "locked.csv"
    shutil.copy(DLC, locked)
    locked.chmod(0)
    result = runner.invoke(app, ["ingest", str(locked), "-o", str(inputs.tmp / "l.zarr")])
    assert result.exit_code == 1 and str(locked) in result.output


def test_mixed_dimension_nwb_is_read_whole_and_said(inputs):
    out = inputs.tmp / "mixed.zarr"
    result = runner.invoke(app, ["ingest", str(NWB_MIXED), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "mixed 2D and 3D" in result.output and "front_right_paw" in result.output


#: One real file of each reader with options of its own (and the shared keypoint map).
READER_FILES = {
    "nwb": REAL / "nwb" / "0.3.0_poseestimation_two_cameras.nwb",
    "bvh": REAL / "bvh" / "test_freebvh.bvh",
    "anipose": REAL / "anipose" / "mouse_paw.csv",
    "c3d": C3D,
    "slp": REAL / "unclaimed" / "minimal_instance.slp",
}


@pytest.mark.parametrize("reader", sorted(READER_FILES))
def test_every_readers_own_options_take_malformed_values_in_one_line(inputs, reader):
    """Each reader's own ``-O`` options, and the keypoint map, given text, numbers and
    values out of range: exit 0 or one error line, never an internal error."""
    from pipeline.tracks.reader_registry import pick_reader, reader_options

    path = READER_FILES[reader]
    names = [*reader_options(pick_reader(path)), "keypoint_map"]
    out = str(inputs.tmp / f"opt-{reader}.zarr")
    for name in names:
        for value in ("nosuch", "-1", "1e999", "0"):
            check(["ingest", str(path), "-o", out, "--overwrite", "-O", f"{name}={value}"])
