"""OpenPose-style JSON: a folder of per-frame files (OpenPose, RTMPose via Pose2Sim, ...).

One file per video frame, the frame number the last run of digits in its name
(``cam01.0042.json``, ``video_000000000042_keypoints.json``)::

    {"version": 1.3, "people": [{"person_id": [-1], "pose_keypoints_2d": [x0, y0, c0, ...]}]}

What is read:

- keypoints: ``pose_keypoints_2d`` as (x, y, confidence) triples in pixels. A keypoint
  OpenPose did not detect (confidence 0) is missing (NaN position, confidence 0).
- skeleton: the ``skeleton=`` option (a name of :data:`pipeline.tracks.pose_skeletons.
  SKELETONS`), else the one skeleton with that many keypoints; 25 keypoints are BODY_25
  when keypoint 8 (``CHip``) lies midway between the hips (9, 12) and keypoint 1 (``Neck``)
  between the shoulders (2, 5), BODY_25B when keypoint 8 is far from the hips' midpoint
  (it is the right elbow there), else an error asks for ``skeleton=``; stated in
  ``attrs["skeleton"]`` and ``attrs["skeleton_from"]``.
- people: every person of a frame is a candidate: individual ``person<i>`` is the i-th
  entry of each frame's ``people``, not the same person across frames or views
  (``attrs["individuals_associated"] = False``); frames with fewer people are NaN there.
- person ids: each detection's ``person_id`` (trackers number people; OpenPose writes
  ``[-1]``) in ``person_id (time, individual)``, -1 where none.
- frames: frame numbers from the names; frames missing between the first and the last
  are NaN. ``time`` is ``frame / fps`` (JSON records no rate: ``fps`` is required).
- other files (``*.json.old``, names without a frame number, other suffixes) are skipped
  with one warning naming their count and one example.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.errors import reader_option
from pipeline.tracks.pose_skeletons import SKELETONS, skeletons_with
from pipeline.tracks.readers.reader_helpers import fail, resolve_fps
from pipeline.tracks.schema import make_tracks_dataset

FORMAT = "openpose"
SUFFIXES: tuple[str, ...] = ()
SOFTWARE = "OpenPose"
KEY = "pose_keypoints_2d"
_FRAME = re.compile(r"(\d+)(?!.*\d)")
#: BODY_25 vs BODY_25B: median distance of keypoint 8 from the hips' midpoint (and of 1
#: from the shoulders'), over their width, below which it is BODY_25's CHip (and Neck),
#: and of 8 above which it is BODY_25B's right elbow.
MIDHIP_AT_MOST, ELBOW_AT_LEAST = 0.25, 0.6


def frame_files(folder: Path) -> tuple[list[tuple[int, Path]], list[Path]]:
    """(frame number, file) of the frame files in ``folder``, sorted, and the skipped files."""
    frames, skipped = [], []
    for path in sorted(folder.iterdir()):
        match = _FRAME.search(path.name[: -len(".json")]) if path.suffix == ".json" else None
        if path.is_file() and match:
            frames.append((int(match.group(1)), path))
        elif not path.name.startswith("."):
            skipped.append(path)
    frames.sort()
    return frames, skipped


def _person_id(person: dict) -> int:
    """A detection's tracker id (``person_id``: an int or OpenPose's ``[id]``), -1 if none."""
    value = person.get("person_id", -1)
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else -1
    return int(value) if isinstance(value, int | float) and value == int(value) else -1


def _load(path: Path) -> list[list[float]]:
    """The ``pose_keypoints_2d`` lists of one frame file, each followed by its person id."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise fail(path, f"not a JSON frame file ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("people"), list):
        raise fail(path, "no 'people' list: not an OpenPose-style frame file")
    out = []
    for i, person in enumerate(data["people"]):
        values = person.get(KEY) if isinstance(person, dict) else None
        if not isinstance(values, list) or len(values) % 3:
            raise fail(path, f"people[{i}].{KEY}: expected a list of x, y, confidence triples")
        out.append([*values, _person_id(person)])
    return out


def _midway(arrays: np.ndarray, middle: int, a: int, b: int) -> float:
    """Median distance of keypoint ``middle`` from the midpoint of ``a`` and ``b``, over theirs.

    ``arrays (frame, person, keypoint, 3)``; NaN when never measurable.
    """
    xy = arrays[:, :, :, :2]
    width = np.linalg.norm(xy[:, :, a] - xy[:, :, b], axis=-1)
    off = np.linalg.norm(xy[:, :, middle] - (xy[:, :, a] + xy[:, :, b]) / 2, axis=-1)
    ok = np.isfinite(off) & (width > 0)
    return float(np.median(off[ok] / width[ok])) if ok.any() else float("nan")


def _guess(path: Path, arrays: np.ndarray, n: int, skeleton: str | None) -> tuple[str, str]:
    """(skeleton name, how it was chosen) for ``n`` keypoints."""
    if skeleton is not None:
        names = {k.upper(): k for k in SKELETONS}
        if skeleton.upper() not in names:
            raise fail(path, f"option 'skeleton': {skeleton!r}; valid: {', '.join(SKELETONS)}")
        chosen = names[skeleton.upper()]
        if len(SKELETONS[chosen]) != n:
            raise fail(
                path,
                f"option 'skeleton': {chosen} has {len(SKELETONS[chosen])} keypoints, the files "
                f"have {n}; skeletons with {n}: {', '.join(skeletons_with(n)) or 'none'}",
            )
        return chosen, "option"
    fits = skeletons_with(n)
    if len(fits) == 1:
        return fits[0], "keypoint count"
    if set(fits) == {"BODY_25", "BODY_25B"}:
        hips, neck = _midway(arrays, 8, 9, 12), _midway(arrays, 1, 2, 5)
        if hips <= MIDHIP_AT_MOST and not neck > MIDHIP_AT_MOST:
            return "BODY_25", "keypoint layout (keypoints 8 and 1 midway between hips, shoulders)"
        if hips >= ELBOW_AT_LEAST:
            return "BODY_25B", "keypoint layout (keypoint 8 not between the hips)"
    raise fail(
        path,
        f"cannot tell the skeleton of {n} keypoints; pass "
        f"{reader_option('skeleton', 'NAME')}, valid: "
        + ", ".join(f"{k} ({len(v)})" for k, v in SKELETONS.items()),
    )


def sniff(path: str | Path) -> bool:
    """Return True for a folder whose first frame file is JSON with a ``people`` list."""
    path = Path(path)
    if not path.is_dir():
        return False
    try:
        frames, _ = frame_files(path)
        if not frames:
            return False
        data = json.loads(frames[0][1].read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("people"), list)


def read(path: str | Path, *, fps: float | None = None, skeleton: str | None = None) -> xr.Dataset:
    """Read a folder of OpenPose-style per-frame JSON files (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The folder of frame files.
    fps : float
        Frames per second (the files do not record it); required.
    skeleton : str, optional
        ``BODY_25``, ``BODY_25B``, ``COCO_17``, ``COCO_18`` or ``HALPE_26``; default by
        the keypoint count (and layout, for 25 keypoints).

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y], keypoint, individual=person0..)`` pixels,
        ``confidence`` the detector's scores, unit ``px``, up axis ``-y`` (image rows).

    Raises
    ------
    TracksError
        Not a folder, no frame files, a frame file that is not JSON or has no ``people``,
        keypoint counts that differ between files or people (mixed skeletons), an
        unknown or mismatched ``skeleton``, no ``fps``.
    """
    path = Path(path)
    if not path.is_dir():
        raise fail(path, "the openpose reader takes a folder of per-frame JSON files")
    frames, skipped = frame_files(path)
    if not frames:
        raise fail(path, "no frame files (*.json with a frame number in the name)")
    rate = resolve_fps(path, "OpenPose JSON", None, fps)
    numbers = [n for n, _ in frames]
    dupes = sorted({n for n in numbers if numbers.count(n) > 1})
    if dupes:
        clash = [p.name for n, p in frames if n == dupes[0]]
        raise fail(path, f"frame {dupes[0]} has several files: {clash}")
    people = [(file, _load(file)) for _, file in frames]
    counts: dict[int, Path] = {}
    for file, persons in people:
        for values in persons:
            counts.setdefault((len(values) - 1) // 3, file)
    if len(counts) > 1:
        listing = "; ".join(f"{k} keypoints in {f.name}" for k, f in sorted(counts.items()))
        raise fail(path, f"mixed skeletons: the frame files differ in keypoint count ({listing})")
    if not counts:
        raise fail(path, "no person is detected in any frame file")
    (n_keypoints,) = counts
    n_people = max(len(p) for _, p in people)
    first = numbers[0]
    data = np.full((numbers[-1] - first + 1, n_people, n_keypoints, 3), np.nan)
    ids = np.full(data.shape[:2], -1, dtype=np.int32)
    for number, (_, persons) in zip(numbers, people, strict=True):
        for i, values in enumerate(persons):
            data[number - first, i] = np.asarray(values[:-1], dtype=np.float64).reshape(-1, 3)
            ids[number - first, i] = values[-1]
    undetected = data[..., 2] <= 0
    data[..., :2][undetected] = np.nan
    name, how = _guess(path, data, n_keypoints, skeleton)
    if skipped:
        warnings.warn(
            f"{path}: skipped {len(skipped)} file(s) that are not frame files, e.g. "
            f"{skipped[0].name!r}",
            UserWarning,
            stacklevel=2,
        )
    ds = make_tracks_dataset(
        data[..., :2].transpose(0, 3, 2, 1),
        data[..., 2].transpose(0, 2, 1),
        keypoints=SKELETONS[name],
        individuals=[f"person{i}" for i in range(n_people)],
        fps=rate,
        time=(first + np.arange(data.shape[0])) / rate,
        space=("x", "y"),
        source_software=SOFTWARE,
        source_file=path,
        unit="px",
        up_axis="-y",
        extra_attrs={
            "source_format": FORMAT,
            "skeleton": name,
            "skeleton_from": how,
            "first_frame": first,
            "n_frame_files": len(frames),
            "skipped_files": [p.name for p in skipped],
            "individuals_associated": False,
            "individuals_note": (
                "person<i> is the i-th detection of each frame, not one person across "
                "frames or views"
            ),
        },
    )
    ds["person_id"] = (("time", "individual"), ids)
    ds["person_id"].attrs["description"] = "the file's person_id of each detection; -1: none"
    return ds
