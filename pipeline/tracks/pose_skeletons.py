"""Keypoint names of the common 2D human pose estimators' skeletons, in output order.

The names follow Pose2Sim's skeleton definitions (whose OpenSim marker sets use them:
``RHip``, ``Neck``, ``Head``...), so a Pose2Sim model's markers match the tracks by name;
keypoints Pose2Sim leaves unnamed (eyes, ears) get OpenPose's names in the same style.

- ``BODY_25``: OpenPose's default model (``CHip`` is OpenPose's ``MidHip``);
- ``BODY_25B``: OpenPose's experimental model (``Neck`` and ``Head`` are OpenPose's
  ``UpperNeck`` and ``HeadTop``); same count as BODY_25, different order;
- ``COCO_18``: OpenPose's COCO model;
- ``COCO_17``: the COCO keypoints of MMPose, RTMPose, YOLO-pose, AlphaPose;
- ``HALPE_26``: AlphaPose's and RTMPose's body with feet.
"""

from __future__ import annotations

__all__ = ["SKELETONS", "skeletons_with"]

_FACE = ("Nose", "LEye", "REye", "LEar", "REar")
_COCO_BODY = (
    "LShoulder",
    "RShoulder",
    "LElbow",
    "RElbow",
    "LWrist",
    "RWrist",
    "LHip",
    "RHip",
    "LKnee",
    "RKnee",
    "LAnkle",
    "RAnkle",
)

#: Skeleton name -> keypoint names in the estimator's output order.
SKELETONS: dict[str, tuple[str, ...]] = {
    "BODY_25": (
        "Nose",
        "Neck",
        "RShoulder",
        "RElbow",
        "RWrist",
        "LShoulder",
        "LElbow",
        "LWrist",
        "CHip",
        "RHip",
        "RKnee",
        "RAnkle",
        "LHip",
        "LKnee",
        "LAnkle",
        "REye",
        "LEye",
        "REar",
        "LEar",
        "LBigToe",
        "LSmallToe",
        "LHeel",
        "RBigToe",
        "RSmallToe",
        "RHeel",
    ),
    "BODY_25B": (
        *_FACE,
        *_COCO_BODY,
        "Neck",
        "Head",
        "LBigToe",
        "LSmallToe",
        "LHeel",
        "RBigToe",
        "RSmallToe",
        "RHeel",
    ),
    "COCO_18": (
        "Nose",
        "Neck",
        "RShoulder",
        "RElbow",
        "RWrist",
        "LShoulder",
        "LElbow",
        "LWrist",
        "RHip",
        "RKnee",
        "RAnkle",
        "LHip",
        "LKnee",
        "LAnkle",
        "REye",
        "LEye",
        "REar",
        "LEar",
    ),
    "COCO_17": (*_FACE, *_COCO_BODY),
    "HALPE_26": (
        *_FACE,
        *_COCO_BODY,
        "Head",
        "Neck",
        "Hip",
        "LBigToe",
        "RBigToe",
        "LSmallToe",
        "RSmallToe",
        "LHeel",
        "RHeel",
    ),
}


def skeletons_with(n_keypoints: int) -> list[str]:
    """The skeleton names with ``n_keypoints`` keypoints (several for 25)."""
    return [name for name, names in SKELETONS.items() if len(names) == n_keypoints]
