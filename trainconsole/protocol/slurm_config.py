"""A run's `[slurm]` section: where on a Slurm cluster it runs (stdlib only).

A config with a `[slurm]` section (or `trainconsole run|tune --slurm ...`) is submitted as a Slurm job;
without one nothing changes. The keys are what `sbatch` takes; what Slurm alone knows (a partition's
name, the GPUs a node has) is Slurm's to refuse at submission, in its own words.
"""

from __future__ import annotations

import re
from typing import Any

from .config_error import ConfigError
from .config_field import Field, checked

#: Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or no limit.
TIME = re.compile(r"\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE",
                  re.IGNORECASE)
TIME_WORDS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (Slurm's --time)"


def _time(value: str) -> str | None:
    return None if not value or TIME.fullmatch(value) else "must be " + TIME_WORDS


def _strings(value: list[Any]) -> str | None:
    return None if all(isinstance(v, str) for v in value) else "must be a list of strings"


def _word(value: str) -> str | None:
    """A partition, account or QOS name: one word (it goes onto sbatch's command line)."""
    ok = re.fullmatch(r"[\w.,:+-]*", value)
    return None if ok else "must be a Slurm name (letters, digits, _ . , : + -)"


SLURM_SCHEMA: dict[str, Field] = {
    "enabled": Field(bool, True, help="false: the run starts on this host, as without [slurm]"),
    "partition": Field(str, "", _word, "the partition (empty: the cluster's default)"),
    "nodes": Field(int, 1, help="nodes of the allocation (more than 1: ddp across them)", low=1, high=4096),
    "gpus_per_node": Field(int, 0, help="GPUs asked for on each node (--gpus-per-node)", low=0, high=64,
                           why="no node has more"),
    "cpus_per_task": Field(int, 0, help="CPUs for the run on each node; 0 = Slurm's default", low=0,
                           high=4096),
    "time": Field(str, "", _time, "the time limit (empty: the partition's)",
                  allowed="a string: " + TIME_WORDS),
    "account": Field(str, "", _word, "the account charged"),
    "qos": Field(str, "", _word, "the quality of service"),
    "sbatch_args": Field(list, [], _strings, "more sbatch options, e.g. [\"--constraint=a100\"]",
                         allowed="a list of strings"),
    "requeue": Field(bool, False, help="near the time limit or preempted: checkpoint, then come back as the "
                     "same run from last.pt"),
    "signal_s": Field(int, 120, help="seconds before the time limit the run is told to checkpoint and stop",
                      low=0, high=65535, why="sbatch --signal's range"),
}


def validate_slurm(values: Any) -> dict[str, Any]:
    """The `[slurm]` section checked and filled with defaults (ConfigError names the key)."""
    if not isinstance(values, dict):
        raise ConfigError("slurm", "must be a table")
    section = {k: list(f.default) if isinstance(f.default, list) else f.default
               for k, f in SLURM_SCHEMA.items()}
    for key, value in values.items():
        section[key] = checked("slurm", SLURM_SCHEMA, key, value)
    check_signal(section)
    return section


def time_limit_s(value: str) -> int | None:
    """Seconds of a Slurm time limit (`90`, `1:30:00`, `2-12`...); None for none (empty, UNLIMITED)."""
    if not value or not value[0].isdigit():
        return None
    days, _, clock = value.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:  # D-HH[:MM[:SS]]
        parts += [0] * (3 - len(parts))
        return int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    if len(parts) == 1:  # minutes
        return parts[0] * 60
    weights = (60, 1) if len(parts) == 2 else (3600, 60, 1)
    return sum(p * w for p, w in zip(parts, weights, strict=True))


def as_squeue(value: str) -> str:
    """A time limit as squeue writes it (`10` -> `10:00`, `90` -> `1:30:00`, `2-12` -> `2-12:00:00`);
    as given where it is none (`UNLIMITED`) or not Slurm's."""
    try:
        total = time_limit_s(value)
    except ValueError:
        return value
    if total is None:
        return value
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours or days else f"{rest // 60}:{rest % 60:02d}"
    return f"{days}-{hours:02d}:{rest // 60:02d}:{rest % 60:02d}" if days else clock


def check_signal(section: dict[str, Any]) -> None:
    """The time-limit signal must come before the limit: a `signal_s` at or past it would stop the run
    at its start (a run stopped after 30 s of a one-minute limit, told nothing)."""
    limit = time_limit_s(section["time"])
    if limit is not None and section["signal_s"] and section["signal_s"] >= limit:
        raise ConfigError("slurm.signal_s", f"must be below the time limit (slurm.time = {section['time']}: "
                          f"{limit} s): set it lower, or 0 for no signal before the limit",
                          section["signal_s"])


def check_with_strategy(config: dict[str, Any], search: bool = False) -> None:
    """A run across nodes is a ddp run (or a script / `search`, which place their own processes)."""
    slurm, strategy = config["slurm"], config["strategy"]
    if slurm["nodes"] > 1 and strategy["name"] != "ddp" and not config["script"]["path"] \
            and not search and "tune" not in config:
        raise ConfigError("slurm.nodes", "more than 1 node needs strategy.name = 'ddp' (a "
                          f"{strategy['name']} run lives on one node)", slurm["nodes"])
    if slurm["nodes"] > 1 and slurm["requeue"]:
        raise ConfigError("slurm.requeue", "comes back on one node only: set slurm.nodes = 1, or requeue "
                          "= false (resume the run yourself)", slurm["requeue"])
    if strategy["ray_address"]:
        raise ConfigError("strategy.ray_address", "a Slurm run's ranks live in its allocation: drop "
                          "ray_address or [slurm]", strategy["ray_address"])


def submitted(config: dict[str, Any]) -> bool:
    """Whether this config's run goes to Slurm (a `[slurm]` section that is not `enabled = false`)."""
    section = config.get("slurm")
    return isinstance(section, dict) and bool(section.get("enabled", True))
