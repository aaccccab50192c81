"""The logistic regression behind the Pathfinder closeness measures (``stats``, ``two_sample``).

Features are standardised on the training rows; the fit is L2-penalised with the inverse strength
``PENALTY`` = 1 (scikit-learn's default C) and an unpenalised intercept, by Newton's method; a row
is predicted positive when its score is above 0.
"""

from __future__ import annotations

import numpy as np

PENALTY = 1.0  # inverse L2 strength, as scikit-learn's C
NEWTON_STEPS = 100


def fit_logistic(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Weights (F + 1,) (last: intercept) of the penalised logistic regression of ``labels``
    (n,) 0/1 on ``features`` (n, F)."""
    design = np.column_stack([features, np.ones(len(labels))])
    penalty = np.eye(design.shape[1]) / PENALTY
    penalty[-1, -1] = 0.0
    weights = np.zeros(design.shape[1])
    for _ in range(NEWTON_STEPS):
        chance = 1.0 / (1.0 + np.exp(-design @ weights))
        gradient = design.T @ (chance - labels) + penalty @ weights
        hessian = (design.T * (chance * (1.0 - chance))) @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-10:
            break
    return weights


def predict(train_features: np.ndarray, train_labels: np.ndarray, test_features: np.ndarray) -> np.ndarray:
    """Predicted labels (m,) bool of ``test_features`` (m, F) by the regression fitted on
    ``train_features`` (n, F) and ``train_labels`` (n,), both sides standardised by the training
    rows' mean and spread (a constant feature keeps spread 1)."""
    mean, spread = train_features.mean(axis=0), train_features.std(axis=0)
    spread[spread == 0] = 1.0
    weights = fit_logistic((train_features - mean) / spread, train_labels)
    return ((test_features - mean) / spread) @ weights[:-1] + weights[-1] > 0
