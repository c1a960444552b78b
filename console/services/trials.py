"""A tune run's trials from the console: stop one, or train one's config as a full run."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from trainers import protocol
from trainers.protocol import Config, RunDir

from . import runs


def stop_trial(run: RunDir, trial_id: str) -> None:
    """Ask the tune driver to stop this trial only (the search goes on)."""
    protocol.request_trial_stop(run, trial_id)


def trial_config(run: RunDir, searched: dict[str, Any]) -> Config:
    """The tune run's base config with a trial's searched values, as a plain run config (no [tune]).

    A searched key may be written in full (`train.lr`) or by its short name (`lr`) when that is unique
    among the keys of `[tune.space]`.
    """
    with open(run.config, "rb") as f:
        raw = tomllib.load(f)
    space = raw.pop("tune", {}).get("space", {})
    full = _full_names(list(space))
    for key, value in searched.items():
        name = key if "." in key else full.get(key)
        if name is None:
            raise protocol.ConfigError(f"trial config {key}", "a key of [tune.space]", key)
        section, _, field = name.partition(".")
        raw.setdefault(section, {})[field] = value
    return protocol.validate(raw)


def train_trial(run: RunDir, number: int, searched: dict[str, Any], root: Path | None = None) -> RunDir:
    """Launch a normal run with a trial's config; named after the search and the trial."""
    config = trial_config(run, searched)
    name = f"{run.read_info().get('name') or 'tune'}-trial{number}"
    return runs.launch(config, name=name, root=root)


def _full_names(keys: list[str]) -> dict[str, str]:
    shorts: dict[str, list[str]] = {}
    for key in keys:
        shorts.setdefault(key.rsplit(".", 1)[-1], []).append(key)
        shorts.setdefault(key.replace(".", "_"), []).append(key)
    return {short: names[0] for short, names in shorts.items() if len(names) == 1}
