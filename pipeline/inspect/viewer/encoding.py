"""Arrays in plotly's figure schema: base64 typed arrays, and back to numpy."""

from __future__ import annotations

import base64

import numpy as np

__all__ = ["decode", "typed"]

_DTYPES = {"f4": np.float32, "f8": np.float64, "i4": np.int32, "u1": np.uint8}


def typed(values, dtype: str = "f4") -> dict:
    """A numpy array as plotly's base64 typed array (``{"dtype", "bdata"}``)."""
    data = np.ascontiguousarray(np.asarray(values, dtype=_DTYPES[dtype]).ravel())
    return {"dtype": dtype, "bdata": base64.b64encode(data.tobytes()).decode("ascii")}


def decode(value) -> np.ndarray:
    """The numbers of a plotly data array: a typed array, a list or a numpy array."""
    if isinstance(value, dict) and "bdata" in value:
        raw = base64.b64decode(value["bdata"])
        return np.frombuffer(raw, dtype=_DTYPES[value["dtype"]]).astype(float)
    return np.asarray([np.nan if v is None else v for v in value], dtype=float)
