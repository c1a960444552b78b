"""How a run's processes are started so that the launch directory cannot shadow trainconsole. Stdlib only.

A run starts as `python -P -m trainconsole.trainers...` (`-P`, Python 3.11+: no script directory or cwd
on sys.path), in the directory it was launched from. Plug-ins (`"package.module:factory"` in a config)
still resolve from that directory: it travels in `TRAINCONSOLE_LAUNCH_DIR` (inherited by DDP ranks and
Ray workers) and `reach_launch_dir` adds it at the *end* of sys.path, after the installed packages, so a
user's `trainers/` or `trainconsole/` folder there is never imported in place of ours.
"""

from __future__ import annotations

import os
import sys

#: The directory a run was launched from, for its plug-ins.
ENV_LAUNCH_DIR = "TRAINCONSOLE_LAUNCH_DIR"


def module_command(module: str, python: str = sys.executable) -> list[str]:
    """`python -P -m MODULE`: one of our entry points, isolated from the directory it starts in."""
    return [python, "-P", "-m", module]


def is_module_command(command: list[str], modules: frozenset[str]) -> bool:
    """Whether `command` runs one of `modules` with `-m` (with or without `-P` before it)."""
    flags = command[1:3] if command[1:2] == ["-P"] else command[1:2]
    rest = command[1 + len(flags):]
    return flags[-1:] == ["-m"] and rest[:1] != [] and rest[0] in modules


def reach_launch_dir() -> None:
    """Put the launch directory (else the cwd) at the end of sys.path, once, for a plug-in's import."""
    where = os.environ.get(ENV_LAUNCH_DIR) or os.getcwd()
    if where not in sys.path:
        sys.path.append(where)
