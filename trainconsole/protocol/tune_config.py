"""A tune run's config: the run config plus `[tune]` and its search space `[tune.space]` (stdlib only).

Everything here is checked before Ray starts, so a bad search exits 2 with one line naming the field and
creates nothing. Space keys are `section.key` of the run config; each value a trial may get (every
`choice`/`grid` value, both ends of a range) is validated like a run config, so a trial never starts
with a value a plain run would refuse.
"""

from __future__ import annotations

import math
import os
from typing import Any

from . import machine
from .config import SCHEMA, Config, ConfigError, apply_override, load, read, validate
from .config_field import Field, checked
from .config_values import MAX_COUNT, MAX_DEVICES, SEED_MAX, ray_address

SEARCHERS = ("grid", "random", "optuna", "hyperopt", "bayesopt")
SPACE_KINDS = ("choice", "grid", "uniform", "loguniform", "randint", "quniform")
#: The metrics every trial reports at every epoch, and the mode that optimises each (losses: min).
METRICS = {"val_acc": "max", "val_loss": "min", "train_loss": "min"}
#: Which kinds each searcher can take (Ray's searchers refuse the others, or silently drop them).
KINDS_FOR = {
    "grid": SPACE_KINDS, "random": SPACE_KINDS,
    "optuna": ("choice", "uniform", "loguniform", "randint", "quniform"),
    "hyperopt": ("choice", "uniform", "loguniform", "randint", "quniform"),
    "bayesopt": ("uniform", "quniform"),  # BayesOptSearch takes float ranges only, on a linear scale
}
MAX_TRIALS = 100_000


TUNE_SCHEMA: dict[str, Field] = {
    "search": Field(str, "random", choices=SEARCHERS),
    "num_samples": Field(int, 8, help="trials (per grid point for grid)", low=1, high=MAX_TRIALS),
    "metric": Field(str, "val_acc", choices=tuple(METRICS), help="the metric to optimise (every epoch)"),
    "mode": Field(str, "auto", choices=("auto", "max", "min"), help="auto: min for a loss, max for accuracy"),
    "scheduler": Field(str, "asha", choices=("asha", "none"), help="asha: stop weak trials early"),
    "max_t": Field(int, 0, help="epochs at most (also the trials' train.epochs); 0 = train.epochs",
                   low=0, high=MAX_COUNT),
    "grace_period": Field(int, 1, help="ASHA: epochs before a trial may be stopped", low=1, high=MAX_COUNT),
    "reduction_factor": Field(float, 2.0, low=1.5, high=100,
                              why="ASHA keeps 1/factor of the trials at each rung; near 1 it builds "
                              "millions of rungs"),
    "max_concurrent": Field(int, 2, help="trials at once", low=1, high=MAX_DEVICES,
                            why="Ray reserves cores for this many trials"),
    "cpus_per_trial": Field(float, 1.0, low=0, low_open=True, high=machine.CPUS,
                            why="a trial cannot have more cores than the machine"),
    "gpus_per_trial": Field(float, 0.0, help="fractions allowed (0.5: two trials share a GPU)", low=0,
                            high=MAX_DEVICES, why="GPUs of one node"),
    "ray_address": Field(str, "", ray_address, "join this Ray cluster"),
    "reuse_actors": Field(bool, True, help="reuse Ray workers between trials (no torch re-import)"),
    "seed": Field(int, 0, help="the searcher's random seed", low=0, high=SEED_MAX, why="NumPy's seed range"),
    "space": Field(dict, {}, help="the search space: \"section.key\" = { kind = [...] }",
                   allowed='a table of search keys, e.g. "train.lr" = { loguniform = [1e-4, 0.1] }'),
}


def load_tune(path: str | os.PathLike[str], overrides: list[str] = ()) -> Config:  # type: ignore[assignment]
    """Read a tune config (run config + `[tune]`), apply `--set` overrides, validate both; the result's
    `tune` holds every `[tune]` key resolved (max_t filled in) and `tune.space`."""
    raw = read(path)  # a malformed file is named with its line, as for run configs
    for item in overrides:
        apply_tune_override(raw, item)
    return validate_tune(raw)


def load_any(path: str | os.PathLike[str]) -> Config:
    """A run config, or a tune config when the file has a `[tune]` section, validated."""
    return load_tune(path) if "tune" in read(path) else load(path)


def apply_tune_override(raw: dict[str, Any], item: str) -> None:
    """`--set tune.KEY=V` and `--set tune.space.SECTION.KEY={kind=[...]}` go to `[tune]`; others as usual."""
    key = item.partition("=")[0].strip()
    if not key.startswith("tune."):
        apply_override(raw, item)
        return
    probe: dict[str, Any] = {}
    apply_override(probe, item)  # parses the value as TOML, like every --set
    (name, value), = probe["tune"].items()
    tune = raw.setdefault("tune", {})
    if name.startswith("space."):
        tune.setdefault("space", {})[name.removeprefix("space.")] = value
    else:
        tune[name] = value


def validate_tune(raw: dict[str, Any]) -> Config:
    """The validated run config with a validated, resolved `tune` section."""
    raw = dict(raw)
    tune_raw = raw.pop("tune", None)
    if not isinstance(tune_raw, dict):
        raise ConfigError("tune", "a tune config needs a [tune] section (with [tune.space])")
    tune = {k: _copy(f.default) for k, f in TUNE_SCHEMA.items()}
    for key, value in tune_raw.items():
        tune[key] = _check(key, value)
    here = not tune["ray_address"]  # on a Ray cluster, each trial checks its devices where it runs
    config = validate(raw, here, search=True)
    tune["max_t"] = tune["max_t"] or config["train"]["epochs"]
    config["train"]["epochs"] = tune["max_t"]
    _check_tune(config, tune)
    search = tune["search"]
    tune["space"] = {k: _check_entry(raw, k, entry, search, here) for k, entry in tune["space"].items()}
    config["tune"] = tune
    return config


def _copy(v: Any) -> Any:
    return dict(v) if isinstance(v, dict) else v


def _check(key: str, value: Any) -> Any:
    return checked("tune", TUNE_SCHEMA, key, value)


def _check_tune(config: Config, tune: dict[str, Any]) -> None:
    if config["strategy"]["name"] != "single":
        raise ConfigError("strategy.name", "must be single in a tune config (each trial is one process)",
                          config["strategy"]["name"])
    _check_mode(tune)
    if tune["gpus_per_trial"] > machine.gpu_count() and not tune["ray_address"]:
        raise ConfigError("tune.gpus_per_trial", f"must be <= {machine.gpu_count()}, the GPUs visible here "
                          "(or join a Ray cluster that has them with --ray-address)", tune["gpus_per_trial"])
    if tune["scheduler"] == "asha" and tune["grace_period"] > tune["max_t"]:
        raise ConfigError("tune.grace_period", f"must be <= tune.max_t ({tune['max_t']})",
                          tune["grace_period"])
    space = tune["space"]
    if not space:
        raise ConfigError("tune.space", "must hold at least one key, e.g. "
                          '"train.lr" = { loguniform = [1e-4, 0.1] }')
    grids = [k for k, v in space.items() if _kind_of(f"tune.space.{k}", v)[0] == "grid"]
    if tune["search"] == "grid" and not grids:
        raise ConfigError("tune.search", "grid needs at least one grid key in [tune.space]: { grid = [...] }")


def _check_mode(tune: dict[str, Any]) -> None:
    """Resolve `mode = 'auto'` from the metric; refuse a mode that would optimise the metric backwards."""
    wanted = METRICS[tune["metric"]]
    if tune["mode"] not in ("auto", wanted):
        raise ConfigError("tune.mode", f"must be {wanted} (or auto) for metric {tune['metric']}",
                          tune["mode"])
    tune["mode"] = wanted


def _kind_of(name: str, entry: Any) -> tuple[str, Any]:
    if not isinstance(entry, dict) or len(entry) != 1:
        raise ConfigError(name, "must be a table with one kind, e.g. { choice = [32, 64] }; kinds: "
                          + ", ".join(SPACE_KINDS), entry)
    (kind, args), = entry.items()
    if kind not in SPACE_KINDS:
        raise ConfigError(name, "unknown kind; allowed: " + ", ".join(SPACE_KINDS), kind)
    return kind, args


def _check_entry(raw: dict[str, Any], key: str, entry: Any, search: str, here: bool) -> dict[str, Any]:
    """One search key: a config key, a kind the searcher takes, arguments of the right shape, and
    every value a trial may get valid in the run config."""
    name = f"tune.space.{key}"
    section, _, item = key.partition(".")
    if section not in SCHEMA or item not in SCHEMA[section]:
        raise ConfigError(name, "is not a config key; keys are section.key, e.g. train.lr")
    kind, args = _kind_of(name, entry)
    if kind not in KINDS_FOR[search]:
        raise ConfigError(name, f"{search} search takes only " + ", ".join(KINDS_FOR[search]), kind)
    if kind in ("choice", "grid"):
        values = _choices(name, kind, args)
    else:
        values = _range(name, kind, args, SCHEMA[section][item])
    for value in values:
        _check_value(raw, name, section, item, value, here)
    return {kind: list(args)}


def _choices(name: str, kind: str, args: Any) -> list[Any]:
    if not isinstance(args, list) or not args:
        raise ConfigError(name, f"{kind} takes a non-empty list of values", args)
    return args


def _range(name: str, kind: str, args: Any, spec: Field) -> list[Any]:
    """The ends of a range (the values a trial may get at the extremes), after checking its shape."""
    size = 3 if kind == "quniform" else 2
    shape = {"quniform": "[low, high, q]", "randint": "[low, high) of integers"}.get(kind, "[low, high]")
    if not isinstance(args, list) or len(args) != size or not all(_number(a) for a in args):
        raise ConfigError(name, f"{kind} takes {shape}", args)
    low, high = args[0], args[1]
    if not low < high:
        raise ConfigError(name, f"{kind} needs low < high", args)
    if kind == "loguniform" and low <= 0:
        raise ConfigError(name, "loguniform needs 0 < low < high", args)
    if kind == "randint" and not all(isinstance(a, int) for a in args):
        raise ConfigError(name, "randint takes integers [low, high)", args)
    if kind == "quniform" and args[2] <= 0:
        raise ConfigError(name, "quniform needs q > 0", args)
    types = spec.type if isinstance(spec.type, tuple) else (spec.type,)
    if kind in ("uniform", "loguniform") and float not in types:
        raise ConfigError(name, f"{kind} samples floats; use randint or quniform for an integer key", kind)
    if kind == "quniform" and float not in types and not all(float(a).is_integer() for a in args):
        raise ConfigError(name, "quniform over an integer key takes integer [low, high, q]", args)
    return [low, high - 1] if kind == "randint" else [low, high]


def _check_value(raw: dict[str, Any], name: str, section: str, item: str, value: Any, here: bool) -> None:
    """Validate the whole run config with this value in place (cross-key checks included)."""
    trial = {s: dict(v) for s, v in raw.items() if isinstance(v, dict)}
    trial.setdefault(section, {})[item] = value
    try:
        validate(trial, here, search=True)
    except ConfigError as e:
        raise ConfigError(name, f"value {value!r} is not allowed: {e}") from None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def short_names(keys: list[str]) -> dict[str, str]:
    """`section.key` → the name `trial` events use for it: the key alone (`lr`), or in full where two
    sections share it (`model.name`, `data.name`). The leaderboard abbreviates further for display."""
    names = {k: k.partition(".")[2] for k in keys}
    taken = list(names.values())
    return {k: n if taken.count(n) == 1 else k for k, n in names.items()}


def trial_run_config(config: Config, values: dict[str, Any]) -> Config:
    """The run config of one trial: the tune config without `[tune]`, with `values` in place (keyed by
    `section.key` or by short name), validated like any run config (ConfigError names the key). Not its
    `[slurm]`: a trial runs inside the search's allocation, it is no job of its own."""
    full = {short: key for key, short in short_names(list(config["tune"]["space"])).items()}
    raw = {section: dict(v) for section, v in config.items() if section not in ("tune", "slurm")}
    for key, value in values.items():
        section, _, item = full.get(key, key).partition(".")
        if section not in SCHEMA or item not in SCHEMA[section]:
            raise ConfigError(key, "is not a searched key of this tune run")
        raw[section][item] = plain(f"{section}.{item}", value)
    return validate(raw)


def plain(key: str, value: Any) -> Any:
    """A sampled value of `section.key` as the schema wants it: numpy scalars as Python ones, and 32.0
    as 32 for an integer key (quniform and some searchers sample floats)."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    section, _, item = key.partition(".")
    spec = SCHEMA.get(section, {}).get(item)
    types = () if spec is None else spec.type if isinstance(spec.type, tuple) else (spec.type,)
    if isinstance(value, float) and int in types and float not in types and value.is_integer():
        return int(value)
    return value
