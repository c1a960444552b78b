"""`trainconsole run`'s options for scripts and the queue, and the config they make.

`run --script PATH [--nproc N] [--python PY] [--devices D] [--pattern RE] [--tensorboard DIR] [--queue]
[--min-free-mb MB] [-- ARGS...]`
makes a run of kind `script`; `--queue`, `--min-free-mb` and `--devices` work for config runs too.
`run CONFIG --ray-address HOST:PORT` places a ddp run's ranks on a Ray cluster (`strategy.ray_address`).
"""

from __future__ import annotations

import argparse
import os
import tomllib
from typing import Any

from trainconsole import protocol
from trainconsole.protocol import Config, ConfigError


def add_options(cmd: argparse.ArgumentParser) -> None:
    """Add the script and queue options to the `run` subcommand."""
    cmd.add_argument("--script", metavar="PATH", help="run this training script (then CONFIG is optional)")
    cmd.add_argument("--nproc", type=int, metavar="N", help="with --script: torchrun with N processes")
    cmd.add_argument("--devices", metavar="D", help="auto, a count, or GPU indices like 0,1")
    cmd.add_argument("--pattern", action="append", metavar="REGEX",
                     help="with --script: a metric regex with named groups, e.g. 'loss=(?P<loss>\\S+)'")
    cmd.add_argument("--tensorboard", metavar="DIR", help="with --script: read the TensorBoard files in DIR")
    cmd.add_argument("--python", metavar="PATH",
                     help="with --script: the Python the script (and torchrun's ranks) runs with")
    cmd.add_argument("--no-measure", action="store_true",
                     help="with --script: no probe in its processes, metrics from its output only")
    cmd.add_argument("--queue", action="store_true", help="wait until the devices have --min-free-mb free")
    cmd.add_argument("--min-free-mb", type=int, metavar="MB", help="free memory each device needs to start")
    cmd.add_argument("--ray-address", metavar="HOST:PORT",
                     help="a ddp run: place its ranks on this Ray cluster (one per GPU, else CPU slots)")


def config_for(args: argparse.Namespace) -> tuple[Config, str]:
    """The validated config and the kind of run the command line asks for (a CONFIG with a `[script]
    path` is a script run too)."""
    strategy = _strategy(args)
    if args.config is None and args.script is None:
        raise ConfigError("config", "a TOML config file is required (or --script PATH)")
    if args.nproc is not None and args.nproc < 1:
        raise ConfigError("--nproc", "must be >= 1", args.nproc)
    raw = protocol.config.read(args.config) if args.config else {}
    if args.script is not None or (raw.get("script") or {}).get("path"):
        if args.ray_address is not None:
            raise ConfigError("--ray-address", "places the ranks of a ddp run on a Ray cluster, not a script")
        script = {"path": args.script, "args": args.script_args or None, "nproc": args.nproc,
                  "patterns": args.pattern, "tensorboard": args.tensorboard, "python": args.python,
                  "measure": False if args.no_measure else None}
        return script_config(args.config, args.set, script, strategy), "script"
    for flag in ("nproc", "pattern", "tensorboard", "python"):
        if getattr(args, flag) is not None:
            raise ConfigError(f"--{flag}", "only goes with --script PATH")
    if args.no_measure:
        raise ConfigError("--no-measure", "only goes with --script PATH")
    if args.script_args:
        raise ConfigError("--", "script arguments only go with --script PATH")
    for item in args.set:
        protocol.apply_override(raw, item)
    raw.setdefault("strategy", {}).update({k: v for k, v in strategy.items() if v is not None})
    if args.ray_address is not None:
        _check_ray_strategy(raw["strategy"])
        raw["strategy"]["ray_address"] = args.ray_address
    return protocol.validate(raw), "train"


def _check_ray_strategy(section: Any) -> None:
    """`--ray-address` places ddp ranks: refuse it, naming the flag, for a config of another strategy."""
    name = section.get("name", "single") if isinstance(section, dict) else None
    if name != "ddp":
        raise ConfigError("--ray-address", "places the ranks of a ddp run on a Ray cluster: it needs "
                          "strategy.name = 'ddp'", name)


def _strategy(args: argparse.Namespace) -> dict[str, Any]:
    devices = devices_arg(args.devices) if args.devices is not None else None
    return {"queue": True if args.queue else None, "min_free_mb": args.min_free_mb, "devices": devices}


def script_config(config_path: str | None, sets: list[str], script: dict[str, Any],
                  strategy: dict[str, Any]) -> Config:
    """A validated config for a script run: the file (if any), `--set`s, then the command line's values."""
    raw = protocol.config.read(config_path) if config_path else {}
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
