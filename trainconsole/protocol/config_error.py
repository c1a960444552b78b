"""`ConfigError`: an input that is not allowed, said in one line (stdlib only).

Its own module so that reading a file (`config_file.py`), checking devices (`devices.py`) and the schema
(`config.py`) can all raise it without importing each other.
"""

from __future__ import annotations

import json
from typing import Any


class ConfigError(ValueError):
    """A config value that is not allowed; `str()` is the one line shown to the user."""

    def __init__(self, field_name: str, allowed: str, got: Any = None) -> None:
        self.field = field_name
        shown = "" if got is None else f" (got {toml_text(got)})"
        super().__init__(f"{field_name}: {allowed}{shown}")


def toml_text(v: Any) -> str:
    """A value as TOML spells it (`true`, `"text"`, `[0, 1]`): what a user wrote, not Python's repr."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):  # a TOML basic string escapes like JSON
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_text(i) for i in v) + "]"
    if isinstance(v, dict):  # an inline table, e.g. [tune]'s search space
        return "{ " + ", ".join(f"{toml_text(str(k))} = {toml_text(i)}" for k, i in v.items()) + " }"
    return repr(v)
