"""`[tune]` in Ray's terms: the param space, the search algorithm and the scheduler."""

from __future__ import annotations

from typing import Any

from ray import tune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler
from ray.tune.search import BasicVariantGenerator, Searcher, SearchGenerator

SAMPLERS = {
    "choice": lambda a: tune.choice(a), "grid": lambda a: tune.grid_search(a),
    "uniform": lambda a: tune.uniform(*a), "loguniform": lambda a: tune.loguniform(*a),
    "randint": lambda a: tune.randint(*a), "quniform": lambda a: tune.quniform(*a),
}


def param_space(space: dict[str, dict[str, list[Any]]]) -> dict[str, Any]:
    """`{"train.lr": {"loguniform": [lo, hi]}}` → `{"train.lr": tune.loguniform(lo, hi)}` (flat keys)."""
    out = {}
    for key, entry in space.items():
        (kind, args), = entry.items()
        out[key] = SAMPLERS[kind](args)
    return out


def searcher(tune_cfg: dict[str, Any]) -> Searcher | SearchGenerator | BasicVariantGenerator:
    """The search algorithm named by `tune.search`, seeded by `tune.seed`."""
    kind, seed, n = tune_cfg["search"], tune_cfg["seed"], tune_cfg["num_samples"]
    if kind in ("grid", "random"):
        return BasicVariantGenerator(random_state=seed, max_concurrent=tune_cfg["max_concurrent"])
    if kind == "optuna":
        from ray.tune.search.optuna import OptunaSearch

        return OptunaSearch(seed=seed)
    if kind == "hyperopt":
        from ray.tune.search.hyperopt import HyperOptSearch

        return HyperOptSearch(random_state_seed=seed, n_initial_points=max(1, min(20, n // 3)))
    from ray.tune.search.bayesopt import BayesOptSearch

    return BayesOptSearch(random_state=seed, random_search_steps=max(1, min(10, n // 3)))


def is_generator(search_alg: Any) -> bool:
    """Grid and random search limit their own concurrency (`max_concurrent_trials` is for searchers)."""
    return isinstance(search_alg, BasicVariantGenerator)


def scheduler(tune_cfg: dict[str, Any]) -> TrialScheduler:
    """ASHA (epochs as time: `max_t`, `grace_period`, `reduction_factor`), or first-in-first-out."""
    if tune_cfg["scheduler"] == "none":
        return FIFOScheduler()
    return ASHAScheduler(time_attr="training_iteration", max_t=tune_cfg["max_t"],
                         grace_period=tune_cfg["grace_period"], reduction_factor=tune_cfg["reduction_factor"])
