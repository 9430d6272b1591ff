"""Kimodo's ``meta.json``: prompt texts and durations, and the frame count they imply.

Layout (Kimodo format, part 2): ``{"text": str, "duration": seconds}`` or ``{"texts": [..],
"durations": [..]}`` of equal lengths, plus optional ``num_samples``, ``seed``,
``diffusion_steps`` and ``cfg``. A segment of ``d`` seconds has ``int(d * 30)`` frames
(truncated), so a writer stores ``T / 30 + 1e-6``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pipeline.export.kimodo.kimodo_error import KimodoError

__all__ = ["FPS", "MAX_SEGMENT_FRAMES", "meta_dict", "read_meta", "segment_lengths"]

#: Kimodo's frame rate (frames per second).
FPS = 30
#: Longest prompt segment Kimodo generates (10 s).
MAX_SEGMENT_FRAMES = 300
_EPSILON = 1e-6


def segment_lengths(n_frames: int, max_frames: int = MAX_SEGMENT_FRAMES) -> list[int]:
    """Split ``n_frames`` into the fewest near-equal segments of at most ``max_frames``."""
    if n_frames < 1:
        raise ValueError(f"a clip needs at least one frame, got {n_frames}")
    count = -(-n_frames // max_frames)
    base, extra = divmod(n_frames, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def meta_dict(lengths: list[int], text: str) -> dict[str, Any]:
    """``meta.json`` content for segments of ``lengths`` frames, all with prompt ``text``.

    Durations are ``L / 30 + 1e-6`` s so that ``int(d * 30) == L`` exactly.
    """
    durations = [length / FPS + _EPSILON for length in lengths]
    assert all(int(d * FPS) == n for d, n in zip(durations, lengths, strict=True))
    if len(lengths) == 1:
        return {"text": text, "duration": durations[0]}
    return {"texts": [text] * len(lengths), "durations": durations}


def read_meta(path: str | os.PathLike[str]) -> tuple[list[str], list[int]]:
    """Read a ``meta.json``: prompt texts and segment lengths in frames.

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    texts : list of str
    lengths : list of int
        ``int(duration * 30)`` per segment; the clip has ``sum(lengths)`` frames.

    Raises
    ------
    KimodoError
        Unreadable file, or fields missing, of the wrong type or of unequal lengths.
    """
    file = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KimodoError(f"{file}: meta file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KimodoError(f"{file}: cannot read the meta file ({exc})") from None
    if not isinstance(data, dict):
        raise KimodoError(f"{file}: expected a JSON object with text/duration or texts/durations")
    if "duration" in data:
        texts, durations, field = [data.get("text", "")], [data["duration"]], "duration"
    elif "durations" in data:
        texts, durations, field = data.get("texts"), data["durations"], "durations"
        if not isinstance(durations, list) or not isinstance(texts, list):
            raise KimodoError(f"{file}: texts, durations: expected two lists")
        if len(texts) != len(durations):
            raise KimodoError(
                f"{file}: texts, durations: {len(texts)} texts for {len(durations)} durations"
            )
    else:
        raise KimodoError(f"{file}: missing field 'duration' (or 'durations' with 'texts')")
    lengths = []
    for d in durations:
        ok = isinstance(d, int | float) and not isinstance(d, bool) and math.isfinite(d) and d > 0
        if not ok:
            raise KimodoError(f"{file}: {field}: expected positive seconds, got {d!r}")
        lengths.append(int(d * FPS))
    if not all(isinstance(t, str) for t in texts):
        raise KimodoError(f"{file}: text: expected strings")
    return [str(t) for t in texts], lengths
