"""Which searched hyperparameter mattered: each one's share of the metric's variance (pure, stdlib).

The measure is the one-way ANOVA effect size η² (the correlation ratio): group the finished trials by the
parameter's value (numbers in quantile bins, other values as they are), and take the variance of the group
means, weighted by group size, over the metric's total variance. It is the first-order term of the
functional ANOVA decomposition that fANOVA and PED-ANOVA estimate, computed without a model: O(n log n)
per parameter, well under a second for 1,000 trials. Scores are normalised to sum to 1 for display; a
parameter that takes one value only scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def importance(trials: Sequence[tuple[dict[str, Any], float]]) -> list[tuple[str, float]]:
    """[(parameter, score)] best first, from (searched values, metric) of finished trials."""
    points = [(config, value) for config, value in trials if math.isfinite(value)]
    if len(points) < 3:
        return []
    values = [v for _, v in points]
    mean = sum(values) / len(values)
    total = sum((v - mean) ** 2 for v in values)
    keys = sorted({key for config, _ in points for key in config})
    raw = {key: _explained(points, key, mean) / total if total > 0 else 0.0 for key in keys}
    norm = sum(raw.values())
    scores = {key: (score / norm if norm > 0 else 0.0) for key, score in raw.items()}
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _explained(points: list[tuple[dict[str, Any], float]], key: str, mean: float) -> float:
    """Sum of squares between the groups of `key`'s values."""
    groups: dict[Any, list[float]] = {}
    for label, value in zip(_labels([config.get(key) for config, _ in points]), (v for _, v in points),
                            strict=True):
        groups.setdefault(label, []).append(value)
    return sum(len(g) * (sum(g) / len(g) - mean) ** 2 for g in groups.values())


def _labels(column: list[Any]) -> list[Any]:
    """Group labels: quantile bins for numbers with many distinct values, the values themselves else."""
    numbers = [v for v in column if isinstance(v, (int, float)) and not isinstance(v, bool)]
    distinct = len(set(map(repr, column)))
    bins = max(2, min(10, round(math.sqrt(len(column)))))
    if len(numbers) < len(column) or distinct <= bins:
        return [repr(v) for v in column]
    order = sorted(range(len(column)), key=lambda i: column[i])
    labels: list[Any] = [0] * len(column)
    for rank, i in enumerate(order):
        labels[i] = rank * bins // len(column)
    return labels
