"""A tune run's trials from the console: train one's config as a full run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainers.protocol import Config, RunDir, tune_config

from . import runs


def trial_config(run: RunDir, searched: dict[str, Any]) -> Config:
    """The tune run's base config with a trial's searched values, as a plain run config (no [tune])."""
    return tune_config.trial_run_config(tune_config.load_tune(run.config), searched)


def train_trial(run: RunDir, number: int, searched: dict[str, Any], root: Path | None = None) -> RunDir:
    """Launch a normal run with a trial's config; named after the search and the trial."""
    config = trial_config(run, searched)
    name = f"{run.read_info().get('name') or 'tune'}-trial{number}"
    return runs.launch(config, name=name, root=root)
