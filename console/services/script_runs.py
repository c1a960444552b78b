"""Starting runs the ways the CLI and the setup pane ask for: a script as a run, and queued runs.

A script run's leader is `python -m trainers.scripts RUN_DIR`; a queued run's leader is first the queue
waiter (`python -m trainers.queue RUN_DIR -- COMMAND`), which becomes COMMAND (exec, same pid)
once the run's devices have room. Both go through `runs.launch`, so they get the same run directory,
lock, pid + start-time record, stop and kill as any run.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from trainers import protocol
from trainers.protocol import Config, ConfigError, RunDir
from trainers.protocol.config import read

from . import runs


def script_config(config_path: str | None, sets: list[str], script: dict[str, Any],
                  strategy: dict[str, Any]) -> Config:
    """A validated config for a script run: the file (if any), `--set`s, then the command line's values."""
    raw = read(config_path) if config_path else {}
    for item in sets:
        protocol.apply_override(raw, item)
    section = raw.setdefault("script", {})
    if not isinstance(section, dict):
        raise ConfigError("script", "must be a table")
    section.update({k: v for k, v in script.items() if v is not None})
    if section.get("path"):
        section["path"] = os.path.abspath(os.path.expanduser(section["path"]))
    raw.setdefault("strategy", {}).update({k: v for k, v in strategy.items() if v is not None})
    if not raw["script"].get("path"):
        raise ConfigError("--script", "is required: the path of a training script")
    return protocol.validate(raw)


def devices_arg(text: str) -> Any:
    """`--devices`: auto, a count, or GPU indices (`0,1` or `[0, 1]`); validated with the config."""
    text = text.strip()
    if "," in text and not text.startswith("["):
        text = f"[{text}]"
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def start(config: Config, name: str = "", kind: str = "train", root: Path | None = None) -> RunDir:
    """Launch a run of this kind; through the queue waiter when `[strategy] queue` is on."""
    if kind == "script" and not name:
        name = Path(config["script"]["path"]).stem
    queued = bool(config["strategy"]["queue"])
    argv = None  # the built-in kinds' default command (resume knows it)
    if queued:
        argv = [*runs.QUEUE_WAITER, *runs.COMMANDS[kind]]
    elif kind == "script":
        argv = list(runs.COMMANDS[kind])
    return runs.launch(config, name=name, kind=kind, root=root, argv=argv, queued=queued)
