"""The root attributes of a zarr store, read without opening it as a dataset.

Both stores (tracks and fit) keep what kinefit decides by in their root attributes
(``ds_type``, fingerprints, the raw file's signature and digest); reading them here is
cheap and never fails: a store that cannot be read has none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import zarr

__all__ = ["store_attrs"]


def store_attrs(path: str | Path) -> dict[str, Any]:
    """Return the root attrs of a zarr (format 3) store; empty if missing or unreadable.

    Parameters
    ----------
    path : str or Path
        The store's folder.

    Returns
    -------
    dict
        A copy of the root group's attributes.
    """
    try:
        return dict(zarr.open_group(path, mode="r", zarr_format=3).attrs)
    except Exception:  # noqa: BLE001 - any unreadable store has no attrs
        return {}
