"""`--slurm` and its options on `run`, `tune` and `run --script`: the `[slurm]` section from the command line.

Each option becomes a `--set slurm.KEY=VALUE`, applied after the config file's own `[slurm]`, so the
config's validation (`protocol.slurm_config`) checks it and names the key; any of them implies `--slurm`.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Never

#: option -> (the [slurm] key, argparse type)
OPTIONS = {"partition": ("partition", str), "nodes": ("nodes", int), "gpus-per-node": ("gpus_per_node", int),
           "time": ("time", str), "account": ("account", str), "qos": ("qos", str)}


def add_options(cmd: argparse.ArgumentParser) -> None:
    """Add `--slurm` and the `[slurm]` options to a launching subcommand."""
    group = cmd.add_argument_group("Slurm", "submit the run as a Slurm job (or a [slurm] section)")
    group.add_argument("--slurm", action="store_true", help="submit it as a Slurm job")
    for flag, (key, kind) in OPTIONS.items():
        group.add_argument(f"--{flag}", dest=f"slurm_{key}", type=kind, metavar=key.upper(),
                           help=f"slurm.{key}")
    group.add_argument("--sbatch-arg", dest="slurm_sbatch_args", action="append", metavar="ARG",
                       help="one more sbatch option, e.g. --sbatch-arg=--mem=8G (repeatable)")


def add_resume_options(cmd: argparse.ArgumentParser) -> None:
    """Add the `[slurm]` options a Slurm run may be resumed with (`resume ID --time 2:00:00`)."""
    group = cmd.add_argument_group("Slurm", "a Slurm run's new job asks for these (its config keeps them)")
    for flag in RESUME_OPTIONS:
        key, kind = OPTIONS[flag]
        group.add_argument(f"--{flag}", dest=f"slurm_{key}", type=kind, metavar=key.upper(),
                           help=f"slurm.{key}")


#: What a resumed Slurm run may change.
RESUME_OPTIONS = ("time", "partition", "nodes", "qos", "account")


def resume_sets(args: argparse.Namespace) -> list[str]:
    """The `--set slurm.KEY=VALUE` overrides `resume` asks for."""
    return [f"slurm.{OPTIONS[flag][0]}={json.dumps(getattr(args, f'slurm_{OPTIONS[flag][0]}'))}"
            for flag in RESUME_OPTIONS if getattr(args, f"slurm_{OPTIONS[flag][0]}", None) is not None]


def slurm_sets(args: argparse.Namespace) -> list[str]:
    """The `--set slurm.KEY=VALUE` overrides the command line asks for ([] without any Slurm option)."""
    sets = [f"slurm.{key}={json.dumps(getattr(args, f'slurm_{key}'))}" for key, _ in OPTIONS.values()
            if getattr(args, f"slurm_{key}", None) is not None]
    if getattr(args, "slurm_sbatch_args", None):
        sets.append(f"slurm.sbatch_args={json.dumps(args.slurm_sbatch_args)}")
    if sets or getattr(args, "slurm", False):
        sets.insert(0, "slurm.enabled=true")
    return sets


class _LineParser(argparse.ArgumentParser):
    def error(self, message: str) -> Never:
        raise ValueError(message)


def resume_line_sets(line: str) -> list[str]:
    """The `--set slurm.KEY=VALUE` overrides a line of `resume`'s Slurm options asks for (the console's
    resume form: `--time 2:00:00 --partition gpu`); ValueError names what is wrong."""
    parser = _LineParser(prog="resume", add_help=False)
    add_resume_options(parser)
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise ValueError(f"cannot read the options: {e}") from None
    args, extra = parser.parse_known_args(words)
    if extra:
        raise ValueError(f"not a resume option: {' '.join(extra)} (these are: "
                         f"{', '.join('--' + flag for flag in RESUME_OPTIONS)})")
    return resume_sets(args)
