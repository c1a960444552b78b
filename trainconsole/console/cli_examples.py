"""`trainconsole examples DIR`: the shipped example configs and scripts, copied out to edit and run; and
`run --demo` / `tune --demo`, the shipped demos."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import demos
from .cli_runs import fail


def add_parser(sub: Any) -> None:
    """The `examples` subcommand."""
    cmd = sub.add_parser("examples", help="copy the example configs and scripts into DIR")
    cmd.add_argument("dir", metavar="DIR", help="where to copy them (made if missing)")


def cmd_examples(args: argparse.Namespace) -> int:
    """Copy the examples out; exit 2 naming a file that is there already (nothing is overwritten)."""
    dest = Path(args.dir).expanduser()
    if dest.exists() and not dest.is_dir():
        fail(f"examples: {dest} is not a directory")
    try:
        copied = demos.copy_out(dest)
    except FileExistsError as e:
        fail(f"examples: {e} exists already; nothing copied (choose another DIR)")
    except OSError as e:
        fail(f"examples: cannot copy into {dest} ({e.strerror or e})")
    print(f"{len(copied)} examples in {dest}; try: trainconsole run {dest / demos.RUN_DEMO}")
    return 0


def demo_config(args: argparse.Namespace, command: str) -> str | None:
    """CONFIG, or with `--demo` the shipped demo's path (CONFIG and --demo together: exit 2)."""
    if not args.demo:
        return args.config
    if args.config is not None or getattr(args, "script", None) is not None:
            fail(f"--demo: {command} the shipped demo, or a CONFIG (--script), not both")
    return str(demos.demo(demos.RUN_DEMO if command == "run" else demos.TUNE_DEMO))


COMMANDS = {"examples": cmd_examples}
