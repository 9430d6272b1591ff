"""Manifest identities: ``individuals: {track_name: identity}`` per session."""

from __future__ import annotations

import pytest

from pipeline.archive.discover import read_manifest
from pipeline.config import ArchiveConfig
from pipeline.errors import DiscoveryError


def _manifest(tmp_path, body: str):
    (tmp_path / "m.yaml").write_text(body)
    return read_manifest("m.yaml", ArchiveConfig(path=str(tmp_path)))


def test_manifest_names_identities(tmp_path):
    sessions = _manifest(
        tmp_path,
        "sessions:\n  - {name: d1, file: a.nc, individuals: {animal0: mouse1, animal1: mouse2}}\n"
        "  - {name: d2, file: b.nc}\n",
    )
    assert sessions[0].individuals == {"animal0": "mouse1", "animal1": "mouse2"}
    assert sessions[1].individuals == {}


def test_conflicting_identities_in_a_manifest_are_an_error(tmp_path):
    body = "sessions:\n  - {name: d1, file: a.nc, individuals: {animal0: m1, animal1: m1}}\n"
    with pytest.raises(
        DiscoveryError,
        match=r"m.yaml: sessions\[0\]: individuals: 'animal0' and 'animal1' are both identity 'm1'",
    ):
        _manifest(tmp_path, body)


def test_unsafe_or_malformed_identities_are_errors(tmp_path):
    with pytest.raises(DiscoveryError, match=r"identity of 'animal0'.*unsafe session name"):
        _manifest(tmp_path, "sessions:\n  - {name: d1, file: a.nc, individuals: {animal0: ../x}}\n")
    with pytest.raises(DiscoveryError, match=r"individuals: expected a mapping"):
        _manifest(tmp_path, "sessions:\n  - {name: d1, file: a.nc, individuals: [m1]}\n")
