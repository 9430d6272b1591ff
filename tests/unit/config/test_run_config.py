"""The run config: defaults, presets, overrides, paths, and one clear error per bad key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.config import (
    ConfigError,
    RunConfig,
    cluster_presets,
    default_config_path,
    load_run_config,
    make_run_config,
)
from pipeline.config.config_files import dump_yaml, load_preset
from pipeline.config.cron import check_cron
from pipeline.solve import SolverConfig

# (YAML text, the key path the message must name, more text it must contain)
MALFORMED = [
    ("archiv: {}", "archiv: unknown key", "valid keys: archive, body_plan"),
    ("archive: {patern: '*.csv'}", "archive.patern: unknown key", "patterns"),
    ("archive: {patterns: '*.csv'}", "archive.patterns", "valid list"),
    ("archive: {patterns: ['../*.csv']}", "archive.patterns", "must stay inside"),
    ("archive: {naming: full}", "archive.naming", "'stem' or 'relative'"),
    ("archive: {format: xls}", "archive.format", "valid formats: movement"),
    ("archive: {fps: -30}", "archive.fps", "greater than 0"),
    ("body_plan: missing.json", "body_plan", "no such body-plan file"),
    ("body_plan: 3", "body_plan", "valid string"),
    ("body_plan: autp", "body_plan", "'auto' (each session's best-matching shipped plan"),
    (
        "body_plan: auto\ncalibration: {mode: per_identity}",
        "calibration.mode 'per_identity' with body_plan 'auto'",
        "set calibration.mode: none, or name the body_plan",
    ),
    ("solver: {n_iterations: many}", "solver.n_iterations", "valid integer"),
    ("solver: {n_iterations: 0}", "solver.n_iterations", "positive integer"),
    ("solver: {mode: newton}", "solver.mode", "'gn' or 'lm'"),
    ("solver: {damping: -1.0}", "solver.damping", ">= 0"),
    ("solver: {n_iter: 3}", "solver.n_iter: unknown key", "n_iterations"),
    ("chunking: {chunk_frames: -5}", "chunking.chunk_frames", "greater than or equal to 1"),
    ("chunking: {overlap_frames: 1.5}", "chunking.overlap_frames", "valid integer"),
    ("chunking: {concurrent_sessions: true}", "chunking.concurrent_sessions", "integer"),
    ("cluster: {mode: cloud}", "cluster.mode", "'local', 'address', 'slurm', 'pbs' or"),
    ("cluster: spark", "cluster", "unknown cluster preset 'spark'; valid presets: address"),
    ("cluster: {preset: slurm, cors: 4}", "cluster.cors: unknown key", "cores"),
    ("cluster: {mode: address}", "cluster", "needs address"),
    ("outputs: {exports: [xlsx]}", "outputs.exports.0", "'csv'"),
    ("outputs: {write_report: maybe}", "outputs.write_report", "valid boolean"),
    ("schedule: {cron: '61 * * * *'}", "schedule.cron", "minute '61' is not in 0-59"),
    ("schedule: {cron: 'every day'}", "schedule.cron", "expected 5 fields"),
    ("schedule: {timezone: Mars/Olympus}", "schedule.timezone", "unknown time zone"),
    ("schedule: {deployment: 'no spaces'}", "schedule.deployment", "pattern"),
    ("keypoint_map: {a: 1}", "keypoint_map.a", "valid string"),
]


@pytest.mark.parametrize(("text", "key", "detail"), MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_configs_name_the_key_path(tmp_path, text, key, detail):
    path = tmp_path / "run.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_run_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert key in message and detail in message, message


@pytest.mark.parametrize(
    ("text", "detail"),
    [("- a\n- b\n", "a YAML mapping"), ("archive: [\n", "cannot read"), ("", None)],
)
def test_unreadable_or_empty_files(tmp_path, text, detail):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    if detail is None:
        assert load_run_config(path) == RunConfig.model_validate({})  # empty: all defaults
        return
    with pytest.raises(ConfigError, match=detail):
        load_run_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_run_config(tmp_path / "absent.yaml")


def test_yaml_is_read_safely(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("body_plan: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_run_config(path)


def test_the_builtin_default_is_the_demo_and_fills_every_section():
    config = load_run_config()
    assert default_config_path().name == "default.yaml" and default_config_path().is_file()
    assert config.body_plan == "mannequin"
    # the solver's own defaults (one source) plus the demo's robust loss for its outliers
    assert config.solver_config == SolverConfig(loss="huber", loss_scale=0.03)
    assert config.solver_config.mode == "lm"  # robust to the demo's dropouts and outliers
    assert config.archive.patterns == ["*.nc", "*.csv"] and config.cluster.mode == "local"
    assert Path(config.outputs.root).is_absolute()
    assert config.outputs.fits_dir == Path(config.outputs.root) / "fits"


def test_every_cluster_preset_validates():
    presets = cluster_presets()
    assert set(presets) == {"local", "address", "slurm", "pbs", "kubernetes"}
    for name in presets:
        assert make_run_config({"cluster": name}).cluster.mode == name
    slurm = make_run_config({"cluster": {"preset": "slurm", "queue": "gpu", "n_workers": 2}})
    cores = load_preset("slurm")["cores"]  # the shipped preset's own request per job
    assert (slurm.cluster.queue, slurm.cluster.n_workers, slurm.cluster.cores) == ("gpu", 2, cores)


def test_paths_are_relative_to_the_config_file(tmp_path, monkeypatch):
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / "plan.json").write_text("{}")
    (folder / "run.yaml").write_text(
        "archive: {path: raw, options: {skeleton_file: sk.json}}\n"
        "body_plan: plan.json\nkeypoint_map: map.yaml\noutputs: {root: out}\n"
    )
    monkeypatch.chdir(tmp_path)
    config = load_run_config(folder / "run.yaml")
    assert config.archive.path == str(folder / "raw")
    assert config.archive.options["skeleton_file"] == str(folder / "sk.json")
    assert config.body_plan == str(folder / "plan.json")
    assert config.keypoint_map == str(folder / "map.yaml")
    assert config.outputs.root == str(folder / "out")
    url = load_run_config(folder / "run.yaml", {"archive": {"path": "s3://lab/raw"}})
    assert url.archive.path == "s3://lab/raw"  # URLs are left alone


def test_auto_is_a_body_plan_setting_not_a_file(tmp_path, monkeypatch):
    (tmp_path / "run.yaml").write_text("body_plan: auto\n")
    monkeypatch.chdir(tmp_path)
    assert load_run_config(tmp_path / "run.yaml").body_plan == "auto"  # not made a path


def test_cli_overrides_and_assignments_win(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("solver: {n_iterations: 5, loss: huber}\ncluster: slurm\n")
    config = load_run_config(
        path,
        overrides={"cluster": {"mode": "local", "n_workers": 0}, "body_plan": None},
        assignments=["solver.n_iterations=20", "chunking.chunk_frames=128", "solver.lanes=4"],
    )
    assert config.solver.n_iterations == 20 and config.solver.loss == "huber"
    assert config.chunking.chunk_frames == 128 and config.solver.lanes == 4
    assert config.cluster.mode == "local" and config.cluster.queue is None  # replaced
    with pytest.raises(ConfigError, match=r"--set .solver.n_iterations.: expected key.path=value"):
        load_run_config(path, assignments=["solver.n_iterations"])
    with pytest.raises(ConfigError, match="solver.lanes"):
        load_run_config(path, assignments=["solver.lanes=0"])


def test_effective_config_round_trips(tmp_path):
    config = load_run_config(assignments=["schedule.cron=*/10 6-18 * jan-jun mon-fri"])
    path = tmp_path / "effective.yaml"
    path.write_text(dump_yaml(config.model_dump(mode="json")))
    assert load_run_config(path) == config
    assert (
        yaml.safe_load(path.read_text())["solver"]["neutral_weight"]
        == SolverConfig().neutral_weight
    )


def test_exponent_floats_without_a_dot_are_floats(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("solver: {neutral_weight: 1e-6, damping: 2E-3}\n")
    assert load_run_config(path).solver.neutral_weight == 1e-6


@pytest.mark.parametrize("cron", ["0 3 * * *", "*/15 * * * *", "0 0 1,15 * sun", "@daily"])
def test_valid_cron(cron):
    check_cron(cron)


@pytest.mark.parametrize(
    ("cron", "detail"),
    [
        ("0 24 * * *", "hour '24'"),
        ("0 3 * 13 *", "month '13'"),
        ("*/0 * * * *", "step"),
        ("5-1 * * * *", "runs backwards"),
        ("0 3 * * funday", "weekday 'funday'"),
    ],
)
def test_invalid_cron(cron, detail):
    with pytest.raises(ValueError, match=detail):
        check_cron(cron)


def test_a_fit_config_is_a_run_config(tmp_path):
    path = tmp_path / "fit.yaml"
    path.write_text("solver: {n_iterations: 15}\nchunking: {overlap_frames: 8}\n")
    config = load_run_config(path)
    assert config.solver_config.n_iterations == 15 and config.chunking.overlap_frames == 8


def test_a_repeated_key_is_an_error_not_last_wins(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("solver:\n  n_iterations: 3\nsolver:\n  n_iterations: 5\n")
    with pytest.raises(ConfigError, match=r"twice\.yaml: .*key 'solver' is repeated \(line 3\)"):
        load_run_config(path)
    path.write_text("solver:\n  n_iterations: 3\n  n_iterations: 5\n")
    with pytest.raises(ConfigError, match="key 'n_iterations' is repeated"):
        load_run_config(path)


def test_unset_cli_options_leave_the_file_alone(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("solver: {n_iter: 3}\n")
    with pytest.raises(ConfigError) as caught:
        load_run_config(path, {"outputs": {"root": None}, "archive": {"path": None}})
    assert "solver.n_iter: unknown key" in str(caught.value)
    assert "outputs" not in str(caught.value) and "archive" not in str(caught.value)
