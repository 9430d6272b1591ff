"""The format contract: every registered format of the four kinds declares it, and each
kind refuses unknown formats and options in its own words before any work starts."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.bodyplan import BodyPlanError
from pipeline.bodyplan.importers import REGISTRY as IMPORTERS
from pipeline.bodyplan.importers import guess_format, import_body_plan
from pipeline.cameras import read_calibration
from pipeline.cameras.calibration_files import REGISTRY as CALIBRATIONS
from pipeline.errors import CameraError, ExportError, TracksError
from pipeline.export import export
from pipeline.export.exporter_registry import REGISTRY as EXPORTS
from pipeline.formats.contract import FormatRegistry, Wording
from pipeline.tracks import read_tracks
from pipeline.tracks.reader_registry import REGISTRY as TRACKS
from tests.fixtures.shared_data import SHARED

#: kind -> (registry, the call's leading positional parameters)
KINDS = {
    "tracks": (TRACKS, ("path",)),
    "export": (EXPORTS, ("fit", "plan", "out")),
    "body-plan": (IMPORTERS, ("path",)),
    "calibration": (CALIBRATIONS, ("path",)),
}
EVERY = [(kind, name) for kind, (reg, _) in KINDS.items() for name in reg.names()]


def test_every_kind_registers_formats():
    counts = {kind: len(reg.names()) for kind, (reg, _) in KINDS.items()}
    assert counts["tracks"] >= 12 and counts["export"] == 8
    assert counts["body-plan"] == 4 and counts["calibration"] == 2


@pytest.mark.parametrize(("kind", "name"), EVERY, ids=[f"{k}-{n}" for k, n in EVERY])
def test_every_format_declares_the_contract(kind, name):
    registry, leading = KINDS[kind]
    fmt = registry.formats()[name]
    declared = fmt.declaration
    assert name == declared.FORMAT and isinstance(name, str) and name
    assert isinstance(declared.SUFFIXES, tuple)  # may be empty: folders go by content alone
    assert all(s.startswith(".") and s == s.lower() for s in declared.SUFFIXES)
    assert callable(declared.sniff) and list(inspect.signature(declared.sniff).parameters) == [
        "path"
    ]
    parameters = list(inspect.signature(getattr(declared, registry.call)).parameters.values())
    assert tuple(p.name for p in parameters[: len(leading)]) == leading
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[: len(leading)])
    for p in parameters[len(leading) :]:
        assert p.kind is p.KEYWORD_ONLY, (name, p.name)  # no *args, no **options
        assert p.default is not p.empty, (name, p.name)
    assert registry.options(fmt) == tuple(
        p.name for p in parameters[len(leading) :] if p.name not in registry.hidden
    )


@pytest.mark.parametrize(("kind", "name"), EVERY, ids=[f"{k}-{n}" for k, n in EVERY])
def test_sniff_says_no_to_a_file_of_nothing_and_to_a_missing_file(kind, name, tmp_path):
    fmt = KINDS[kind][0].formats()[name]
    suffix = fmt.suffixes[0] if fmt.suffixes else ""
    empty = tmp_path / f"empty{suffix}"
    empty.write_bytes(b"")
    assert fmt.sniff(empty) is False
    assert fmt.sniff(tmp_path / f"missing{suffix}") is False


def test_unknown_options_are_refused_before_any_work(tmp_path):
    # none of these files exists: the option check comes first, in each kind's words
    bvh = tmp_path / "t.bvh"
    bvh.write_text("HIERARCHY\n")  # read_tracks needs the file to exist, not to parse
    with pytest.raises(
        TracksError,
        match=r"t\.bvh: the bvh reader has no option\(s\) \['colour'\]; valid options: "
        r"individual, keypoint_map, session, translation, unit, up_axis$",
    ):
        read_tracks(bvh, colour="red")
    with pytest.raises(
        ExportError,
        match=r"^bvh export: unknown option\(s\) colour, fps; valid options: individual, "
        r"rotation_order$",
    ):
        export("bvh", tmp_path / "none.zarr", colour="red", fps=30)
    with pytest.raises(
        BodyPlanError,
        match=r"m\.urdf: urdf import: unexpected keyword argument 'sites'; valid options: "
        r"fixed_base, merge_fixed, source, strict$",
    ):
        import_body_plan(tmp_path / "m.urdf", sites=True)
    with pytest.raises(
        CameraError,
        match=r"c\.toml: the anipose calibration reader has no option\(s\) \['views'\]; "
        r"valid options: unit$",
    ):
        read_calibration(tmp_path / "c.toml", views=["a"])
    assert not any(tmp_path.glob("*.zarr")) and not (tmp_path / "m.urdf").exists()


def test_unknown_formats_list_the_valid_ones(tmp_path):
    path = tmp_path / "x.dat"
    path.write_text("1\n")
    with pytest.raises(TracksError, match=r"unknown tracks format 'xyz'; valid formats: movement"):
        read_tracks(path, format="xyz")
    with pytest.raises(ExportError, match=r"unknown export format 'fbx'; valid formats: csv, bvh"):
        export("fbx", tmp_path / "none.zarr")
    with pytest.raises(
        BodyPlanError, match=r"format 'step' is not importable; choose one of mjcf, urdf"
    ):
        import_body_plan(path, format="step")
    with pytest.raises(
        CameraError,
        match=r"x\.dat: unknown calibration format 'xml'; valid formats: anipose \(\.toml\); "
        r"opencv \(\.json, \.yml, \.yaml\)",
    ):
        read_calibration(path, format="xml")
    with pytest.raises(CameraError, match=r"x\.dat: unknown calibration format '\.dat'; valid"):
        read_calibration(path)


def test_calibration_by_content_when_the_suffix_says_nothing(tmp_path):
    text = "%YAML:1.0\ncamera_matrix: !!opencv-matrix\n  rows: 3\n  cols: 3\n  dt: d\n"
    text += "  data: [800., 0., 320., 0., 800., 240., 0., 0., 1.]\n"
    text += "distortion_coefficients: [0.1, 0., 0., 0., 0.]\n"
    text += "rvec: [0., 0., 0.]\ntvec: [0., 0., 1.]\n"
    text += "image_width: 640\nimage_height: 480\n"
    path = tmp_path / "cam0.calib"
    path.write_text(text)
    assert CALIBRATIONS.pick(path).name == "opencv"
    (camera,) = read_calibration(path)
    assert camera.name == "cam0" and camera.size == (640, 480)


def test_xml_goes_by_content_among_the_importers_that_claim_it(tmp_path):
    for head, fmt in (("<robot name='r'/>", "urdf"), ("<mujoco/>", "mjcf")):
        path = tmp_path / f"{fmt}.xml"
        path.write_text(f"<?xml version='1.0'?>\n<!-- a model -->\n{head}\n")
        assert guess_format(path) == fmt
    assert guess_format(tmp_path / "plan.json") == "json"
    (tmp_path / "odd.model").write_text("HIERARCHY\nROOT a\n")
    assert guess_format(tmp_path / "odd.model") == "bvh"


# a toy kind: two formats share ".txt", one alone claims ".one"
ALPHA = SimpleNamespace(
    FORMAT="alpha",
    SUFFIXES=(".txt", ".one"),
    sniff=lambda path: Path(path).read_text().startswith("alpha"),
    read=lambda path, *, level=1: ("alpha", level),
)
BETA = SimpleNamespace(
    FORMAT="beta",
    SUFFIXES=(".txt",),
    sniff=lambda path: Path(path).read_text().startswith("beta"),
    read=lambda path, *, hidden=None: ("beta", hidden),
)


def _toy(trust_suffix: bool) -> FormatRegistry:
    return FormatRegistry(
        "toy",
        (f"{__name__}:ALPHA", f"{__name__}:BETA"),
        call="read",
        error=lambda where, reason: ValueError(f"{where}: {reason}"),
        wording=Wording(unclaimed="no one claims {suffix!r}"),
        hidden=("hidden",),
        trust_suffix=trust_suffix,
    )


def test_the_registry_picks_by_suffix_then_content(tmp_path):
    def write(name, text):
        (tmp_path / name).write_text(text)
        return tmp_path / name

    trusting, sniffing = _toy(True), _toy(False)
    assert trusting.pick(write("b.txt", "beta")).name == "beta"  # shared suffix: sniffed
    assert trusting.pick(write("a.one", "beta")).name == "alpha"  # sole claimant: trusted
    assert sniffing.pick(tmp_path / "a.one").name == "beta"  # every candidate sniffed
    assert trusting.pick(write("x.dat", "alpha")).name == "alpha"  # no claimant: content
    with pytest.raises(ValueError, match=r"x\.bin: cannot tell the toy format \(no one claims"):
        trusting.pick(write("x.bin", "gamma"))
    with pytest.raises(ValueError, match=r"formats for its suffix \(alpha, beta\) do not"):
        trusting.pick(write("g.txt", "gamma"))
    with pytest.raises(ValueError, match=r"unknown toy format 'gamma'; valid formats: alpha "):
        trusting.get("gamma", "here")
    beta = trusting.get("beta")
    assert trusting.options(beta) == () and trusting.valid_options(trusting.get("alpha")) == (
        "level",
    )
    with pytest.raises(ValueError, match=r"the beta toy format has no option\(s\) \['hidden'\]"):
        trusting.check_options(beta, {"hidden": 1})  # hidden: filled by the kind, not users


def _typed_format():
    def read(
        path: str,
        *,
        flag: bool = False,
        count: int = 1,
        rate: float | None = None,
        name: str | None = None,
        pick: int | str | None = None,
    ) -> None:
        return None

    return SimpleNamespace(name="typed", call=read)


def test_option_values_are_checked_against_the_calls_annotations():
    reg = FormatRegistry("tracks", (), call="read", error=lambda where, why: TracksError(why))
    fmt = _typed_format()
    ok = reg.check_values(fmt, {"flag": True, "count": 3, "rate": 2, "name": 0, "pick": 5})
    assert ok == {"flag": True, "count": 3, "rate": 2, "name": "0", "pick": 5}
    assert reg.check_values(fmt, {"rate": None, "name": None}) == {"rate": None, "name": None}
    refused = [
        ({"flag": "nosuch"}, "option 'flag': 'nosuch' is not true or false"),
        ({"flag": 1}, "option 'flag': 1 is not true or false"),
        ({"count": "abc"}, "option 'count': 'abc' is not a whole number"),
        ({"count": 1.5}, "is not a whole number"),
        ({"rate": float("inf")}, "option 'rate': inf is not a finite number or empty"),
        ({"rate": "x"}, "is not a finite number or empty"),
    ]
    for options, message in refused:
        with pytest.raises(TracksError, match=message.replace("(", r"\(")):
            reg.check_values(fmt, options)


def test_every_kind_checks_its_option_values():
    """The registry's check is every kind's: an importer's flag takes true or false."""
    urdf = SHARED / "data" / "models" / "urdf" / "double_pendulum_continuous.urdf"
    with pytest.raises(BodyPlanError, match="option 'fixed_base': 'nosuch' is not true or false"):
        import_body_plan(urdf, fixed_base="nosuch")
    assert import_body_plan(urdf, fixed_base=True).n_dofs >= 1
