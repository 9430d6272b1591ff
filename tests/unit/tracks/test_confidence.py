"""The confidence-to-weight rule, written once (the fit, multi-view fit and calibration)."""

from __future__ import annotations

import numpy as np

from pipeline.tracks.confidence import confidence_weights

NAN = np.nan


def test_observed_keypoints_weigh_their_confidence_unknown_confidence_weighs_one():
    targets = np.array([[[0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    confidence = np.array([[0.25, NAN, -0.5, 2.0]])
    np.testing.assert_array_equal(confidence_weights(confidence, targets), [[0.25, 1.0, 0.0, 2.0]])


def test_a_keypoint_with_any_non_finite_coordinate_weighs_nothing():
    targets = np.array([[[NAN, 1.0], [1.0, np.inf], [1.0, 2.0]]])  # (T=1, K=3, D=2)
    confidence = np.array([[0.9, NAN, 0.8]])
    np.testing.assert_array_equal(confidence_weights(confidence, targets), [[0.0, 0.0, 0.8]])


def test_min_confidence_drops_low_confidences_but_never_unknown_ones():
    targets = np.zeros((2, 3, 3))
    confidence = np.array([[0.1, 0.5, NAN], [0.49, 0.51, 1.0]])
    weights = confidence_weights(confidence, targets, min_confidence=0.5)
    np.testing.assert_array_equal(weights, [[0.0, 0.5, 1.0], [0.0, 0.51, 1.0]])
    np.testing.assert_array_equal(
        confidence_weights(confidence, targets), np.where(np.isnan(confidence), 1.0, confidence)
    )


def test_leading_shapes_of_views_are_kept():
    rng = np.random.default_rng(0)
    targets = rng.normal(size=(4, 2, 5, 2))  # (T, V, K, 2)
    targets[1, 0, 3] = NAN
    confidence = rng.uniform(size=(4, 2, 5))
    weights = confidence_weights(confidence, targets)
    assert weights.shape == (4, 2, 5) and weights.dtype == np.float64
    assert weights[1, 0, 3] == 0.0 and weights[1, 1, 3] == confidence[1, 1, 3]
