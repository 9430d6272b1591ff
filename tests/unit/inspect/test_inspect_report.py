"""HTML reports: valid, self-contained, with every section and its images."""

import base64
import io
import shutil
from html.parser import HTMLParser

import numpy as np
import pytest
import zarr
from PIL import Image

from pipeline.inspect import worst_frames, write_archive_report, write_session_report
from pipeline.store.fit import FitStoreError

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "source", "wbr"}


class StrictParser(HTMLParser):
    """Collects ids, images, links and text; checks every element is closed in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.ids, self.images, self.urls, self.tags = (
            [],
            [],
            [],
            [],
            [],
            [],
        )
        self.text, self.doctype, self.scripts = [], None, []

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "img":
            self.images.append(attrs)
        if tag == "script":
            self.scripts.append(attrs)
        for key in ("src", "href"):
            if key in attrs:
                self.urls.append(attrs[key])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(path):
    parser = StrictParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    assert parser.doctype == "DOCTYPE html"
    assert parser.errors == [] and parser.stack == [], (parser.errors, parser.stack)
    assert len(parser.ids) == len(set(parser.ids)), "duplicate ids"
    assert not {"link", "iframe", "object", "embed"} & set(parser.tags)
    assert not [s for s in parser.scripts if s.get("src")]  # scripts are inline
    for url in parser.urls:  # nothing from the network: in-page links and data URIs only
        assert url.startswith(("#", "data:image/png;base64,")), url
    for href in (u for u in parser.urls if u.startswith("#")):
        assert href[1:] in parser.ids, f"dangling link {href}"
    parser.body = " ".join(" ".join(parser.text).split())
    return parser


def decoded_images(parser):
    out = []
    for img in parser.images:
        data = base64.b64decode(img["src"].removeprefix("data:image/png;base64,"), validate=True)
        image = Image.open(io.BytesIO(data))
        assert image.format == "PNG"
        assert np.asarray(image.convert("L"), dtype=float).std() > 20
        assert img.get("alt")
        out.append(image)
    return out


@pytest.mark.slow  # a full report: 10-60 s
def test_session_report_is_valid_html_with_every_section_and_its_images(walk, fits_root, tmp_path):
    out = write_session_report(fits_root / "walk.zarr", tmp_path / "walk.html", worst=7)
    assert out == tmp_path / "walk.html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.html"]  # no temp file left
    page = parse(out)
    assert {"summary", "worst-frames", "viewer", "plots", "provenance"} <= set(page.ids)
    assert len(decoded_images(page)) == 5
    assert "viewer-plot" in page.ids and "Not converged: the share of frames" in page.body
    text = page.body
    for value in ("body_plan_sha256", "input_sha256", "fingerprint", "kinefit_version"):
        assert walk.attrs[value] in text
    assert "n_iterations" in text and "solver config" in text
    assert "Observed keypoints not shown" not in text
    # the worst frames, with their times, in order
    frames = worst_frames(walk, 7)
    assert "Worst frames (top 7 by RMS error)" in text
    positions = [
        text.index(f"{row.individual} {row.frame} {row.time:.4g} ") for row in frames.itertuples()
    ]
    assert positions == sorted(positions)


@pytest.mark.slow  # a full report: 10-60 s
def test_session_report_default_location_and_missing_tracks(archive_copy):
    fits = archive_copy / "fits"
    zarr.open_group(fits / "walk.zarr", mode="r+").attrs["tracks_store"] = str(
        archive_copy / "moved.zarr"
    )
    out = write_session_report(fits / "walk.zarr")
    assert out == fits / "walk.report.html"
    page = parse(out)
    assert "Observed keypoints not shown" in page.body and "moved.zarr" in page.body
    assert len(decoded_images(page)) == 5


def test_session_report_of_something_else_fails_and_writes_nothing(archive_root, tmp_path):
    with pytest.raises(FitStoreError, match="not a kinefit fit store"):
        write_session_report(archive_root / "tracks" / "walk.zarr", tmp_path / "r.html")
    with pytest.raises(FileNotFoundError, match="no such fit store"):
        write_session_report(tmp_path / "none.zarr", tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # a full report: 10-60 s
def test_archive_report_has_summary_worst_frames_provenance_and_each_session(fits_root, tmp_path):
    out = write_archive_report(fits_root, tmp_path / "archive.html")
    page = parse(out)
    expected = {"summary", "worst-frames", "provenance", "sessions"}
    for key in ("walk", "lab_b_hop"):
        expected |= {f"session-{key}"}
        expected |= {
            f"session-{key}-{s}"
            for s in ("summary", "worst-frames", "viewer", "viewer-plot", "plots", "provenance")
        }
    assert expected <= set(page.ids)
    # overview + the walk's angle distributions (2 individuals; the fly has 1) + 5 per session
    assert len(decoded_images(page)) == 2 + 2 * 5
    assert "Solver config (all sessions)" in page.body
    assert "lab_b/hop" in page.body and "walk" in page.body


@pytest.mark.slow  # a full report: 10-60 s
def test_archive_report_details_only_the_worst_sessions_when_asked(fits_root, tmp_path):
    page = parse(write_archive_report(fits_root, tmp_path / "a.html", detailed=1))
    assert "session-walk-plots" in page.ids and "session-lab_b_hop-plots" not in page.ids
    assert len(decoded_images(page)) == 2 + 5
    assert "session-walk-viewer-plot" in page.ids and "session-lab_b_hop-viewer" not in page.ids
    assert "Full plots for the 1 sessions with the worst RMS error" in page.body


@pytest.mark.slow  # a full report: 10-60 s
def test_archive_report_default_location_and_left_out_stores(archive_copy):
    fits = archive_copy / "fits"
    shutil.copytree(fits / "walk.zarr", fits / ".walk2.zarr.partial")
    out = write_archive_report(fits, observed=False, detailed=0)
    assert out == fits / "report.html"
    page = parse(out)
    assert "Left out" in page.body and "unfinished fit" in page.body
    assert [i["alt"] for i in page.images] == ["archive overview", "angle distributions"]
    assert page.scripts == []  # no viewer, no plotly


def test_archive_report_of_an_empty_folder_says_so(tmp_path):
    page = parse(write_archive_report(tmp_path, tmp_path / "r.html"))
    assert "No complete fit stores found" in page.body and page.images == []
