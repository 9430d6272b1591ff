"""Headless Chromium for the browser tests: the binary, its flags, and a page to open files in.

Chromium is the Debian package (``apt-get install chromium chromium-driver``; ``.ci/run``
installs it), driven through Playwright's Python client with ``executable_path`` (pip's
playwright never downloads a browser here). Outside CI, a machine without Chromium skips
the tests saying so; with ``CI=true`` a missing browser fails them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("KINEFIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTH, HEIGHT = 1400, 900


def need_browser() -> None:
    """Skip (fail with ``CI=true``) unless Chromium and playwright's client are there."""
    missing = []
    if not Path(CHROMIUM).is_file():
        missing.append(f"headless Chromium ({CHROMIUM}; apt-get install chromium chromium-driver)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright's Python client (pip install 'kinefit[dev]')")
    if missing:
        reason = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: .ci/run installs Chromium)")
        pytest.skip(reason)


@contextmanager
def file_page(profile: Path) -> Iterator[tuple[object, dict[str, list]]]:
    """A page of a fresh Chromium profile that loads ``file://`` URLs and nothing else.

    Yields the page and a log: ``console`` ``(type, text)`` messages, page ``errors``,
    ``requests`` made and ``blocked`` ones (any non-file URL, never sent).
    """
    from playwright.sync_api import sync_playwright

    log: dict[str, list] = {"console": [], "errors": [], "requests": [], "blocked": []}
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=FLAGS,
            headless=True,
            viewport={"width": WIDTH, "height": HEIGHT},
        )

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                log["blocked"].append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: log["console"].append((m.type, m.text)))
        page.on("pageerror", lambda e: log["errors"].append(str(e)))
        page.on("request", lambda r: log["requests"].append(r.url))
        try:
            yield page, log
        finally:
            context.close()
