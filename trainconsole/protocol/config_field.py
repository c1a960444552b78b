"""One config key: its type, default, range and checks, and what a wrong value is told (stdlib only)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .config_error import ConfigError
from .machine import Limit

#: Each type in a user's words: what a value of the wrong type is told is allowed.
TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list",
              dict: "a table"}


@dataclass(frozen=True)
class Field:
    """One config key: its type, default, what is allowed (`choices`, a range, a `check`) and why.

    A range is `low`..`high` (inclusive unless `low_open` / `high_open`); `high` may be a machine `Limit`.
    It applies to the key's numbers (a key that also takes a string, like `batch_size = 'auto'`, checks
    the string in `check`). `why` says in the error why the range is what it is. `allowed` says what a
    value of the wrong type is told, where the type's words (`an integer`) or the choices say too little.
    """

    type: type | tuple[type, ...]
    default: Any
    check: Callable[[Any], str | None] | None = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | Limit | None = None
    low_open: bool = False
    high_open: bool = False
    why: str = ""
    allowed: str = ""

    def coerce(self, name: str, value: Any) -> Any:
        """`value` as this key takes it (an integer where a number is wanted becomes a float); a
        ConfigError in a user's words if it is of another type (TOML's true is not an integer)."""
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        if float in types and is_number(value):
            return float(value)
        if isinstance(value, bool) is not (bool in types) or not isinstance(value, types):
            raise ConfigError(name, "must be " + self.type_text(), value)
        return value

    def type_text(self) -> str:
        """What this key takes, in words: `an integer or "auto"`, `one of sgd, adam, adamw`, `a number`."""
        if self.allowed:
            return self.allowed
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        return " or ".join(TYPE_WORDS[t] for t in types)

    def problem(self, value: Any) -> str | None:
        """What is allowed, if `value` (already of the right type) is not; None if it is."""
        if self.choices and value not in self.choices:
            return "must be one of " + ", ".join(map(str, self.choices))
        if is_number(value) and not self.in_range(value):
            return self.range_text() + (f": {self.why}" if self.why else "")
        return self.check(value) if self.check else None

    def in_range(self, v: float) -> bool:
        """Whether a number lies in the range (NaN never does)."""
        high = self.high
        if isinstance(high, Limit):  # every machine has at least 1 of each: read it (NVML: ~50 ms) only above
            high = high.value() if v > 1 else None
        low_ok = self.low is None or (v > self.low if self.low_open else v >= self.low)
        high_ok = high is None or (v < high if self.high_open else v <= high)
        return bool(low_ok and high_ok) and not (isinstance(v, float) and math.isnan(v))

    def range_text(self) -> str:
        """`must be >= 0 and < 1`, `must be <= 16 (the CPU cores of this machine)`."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {show_number(self.low)}")
        if isinstance(self.high, Limit):
            high = show_number(self.high.value())
            parts.append(f"{'<' if self.high_open else '<='} {high}, {self.high.what}")
        elif self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {show_number(self.high)}")
        return "must be " + " and ".join(parts) if parts else ""


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def show_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(v)


def checked(section: str, schema: dict[str, Field], key: str, value: Any) -> Any:
    """`section.key`'s value, coerced and checked against its field (ConfigError naming it otherwise)."""
    from .config_error import ConfigError

    name = f"{section}.{key}"
    spec = schema.get(key)
    if spec is None:
        raise ConfigError(name, "unknown key; allowed: " + ", ".join(schema))
    value = spec.coerce(name, value)
    problem = spec.problem(value)
    if problem:
        raise ConfigError(name, problem, value)
    return value
