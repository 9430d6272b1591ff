"""Where the shared data lives: ``../shared`` beside the checkout, or ``KINEFIT_SHARED``.

Import these from here, not from ``conftest`` (several folders have a conftest.py, so
``from conftest import ...`` depends on which one was imported first).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KINEFIT_SHARED", ROOT.parent / "shared")).resolve()
QUICKIK = SHARED / "data" / "quickik"
KIMODO = SHARED / "data" / "kimodo"
