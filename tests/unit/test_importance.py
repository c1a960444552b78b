"""Parameter importance: the parameter that drives the metric ranks first; noise and constants do not."""

from __future__ import annotations

import math
import random

from trainconsole.console.core.importance import importance


def test_the_driving_parameter_ranks_first_and_a_constant_scores_zero() -> None:
    rng = random.Random(0)
    trials = []
    for _ in range(200):
        config = {"train.lr": 10 ** rng.uniform(-4, 0), "train.momentum": rng.uniform(0, 0.99),
                  "train.optimizer": rng.choice(["sgd", "adam"]), "train.epochs": 3}
        acc = 1 - abs(math.log10(config["train.lr"]) + 2) / 4 + rng.gauss(0, 0.02)  # best at lr = 1e-2
        trials.append((config, acc))
    ranked = importance(trials)
    assert ranked[0][0] == "train.lr" and ranked[0][1] > 0.8
    assert dict(ranked)["train.epochs"] == 0.0
    assert abs(sum(score for _, score in ranked) - 1) < 1e-9


def test_a_categorical_parameter_is_found_and_too_few_trials_give_nothing() -> None:
    rng = random.Random(1)
    trials = [({"opt": opt, "wd": rng.uniform(0, 1e-3)}, (0.9 if opt == "adam" else 0.5) + rng.gauss(0, 0.01))
              for opt in ("sgd", "adam") * 30]
    assert importance(trials)[0][0] == "opt"
    assert importance(trials[:2]) == [] and importance([({"a": 1}, float("nan"))] * 5) == []
