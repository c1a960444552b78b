"""Checks for the config keys of script runs (`[script]`): each returns what is allowed, or None. Stdlib only.

`config.SCHEMA` declares the keys; the checks live here so that the runner can reuse `pattern_problem`.
"""

from __future__ import annotations

import os
import re
from typing import Any

#: Event fields a user pattern may not write (they belong to the event envelope).
RESERVED = ("v", "t", "run", "type")


def script_path(v: str) -> str | None:
    """`script.path`: empty (not a script run) or an existing file."""
    if not v or os.path.isfile(os.path.expanduser(v)):
        return None
    return "must be an existing script file"


def python_path(v: str) -> str | None:
    """`script.python`: empty (the default interpreter) or an executable file; whether it is a Python
    (with torch, where `nproc` needs it) is asked of it at launch (`console.control.interpreter`)."""
    path = os.path.expanduser(v)
    if not v or (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    return "must be the path of a Python interpreter (an executable file), or empty for the default"


def strings(v: list[Any]) -> str | None:
    """`script.args`: strings only."""
    return None if all(isinstance(a, str) for a in v) else "must be a list of strings"


def pattern_problem(pattern: Any) -> str | None:
    """Why a user metric pattern is not allowed (None if it is): a regex with a named group per metric."""
    if not isinstance(pattern, str):
        return "must be a list of regex strings"
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        return f"{pattern!r} is not a valid regex ({e})"
    if not compiled.groupindex:
        return f"{pattern!r} needs a named group, e.g. (?P<loss>[0-9.eE+-]+)"
    reserved = [g for g in compiled.groupindex if g in RESERVED]
    if reserved:
        return f"{pattern!r}: group name {reserved[0]!r} is reserved"
    return None


def patterns(v: list[Any]) -> str | None:
    """`script.patterns`: the first pattern's problem, if any."""
    return next((p for p in map(pattern_problem, v) if p), None)
