"""Reader-setting precedence: what is said for one file wins over the archive config."""

from __future__ import annotations

from pipeline.archive.reader_settings import ReaderSettings, reader_settings
from pipeline.config import ArchiveConfig


def test_the_archive_config_is_the_default():
    archive = ArchiveConfig(format="dlc", fps=30.0, options={"unit": "mm", "up_axis": "y"})
    assert reader_settings(archive) == ReaderSettings(
        "dlc", 30.0, None, {"unit": "mm", "up_axis": "y"}
    )
    assert reader_settings() == ReaderSettings(None, None, None, {})


def test_given_values_win_option_by_option():
    archive = ArchiveConfig(format="dlc", fps=30.0, options={"unit": "mm", "up_axis": "y"})
    how = reader_settings(archive, format="csv", fps=100.0, options={"unit": "cm"})
    assert (how.format, how.fps) == ("csv", 100.0)
    assert how.options == {"unit": "cm", "up_axis": "y"}  # up_axis still the archive's
    assert archive.options == {"unit": "mm", "up_axis": "y"}  # the config is not changed


def test_to_unit_among_the_options_is_taken_out_and_an_explicit_one_wins():
    archive = ArchiveConfig(options={"to_unit": "m", "unit": "mm"})
    how = reader_settings(archive)
    assert how.to_unit == "m" and how.options == {"unit": "mm"}
    assert reader_settings(archive, to_unit="cm").to_unit == "cm"
    assert reader_settings(archive, options={"to_unit": "km"}).to_unit == "km"
