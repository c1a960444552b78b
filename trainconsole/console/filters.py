"""The one filter language of `ls --filter` and the runs table's filter line (pure: no I/O, no Textual).

Terms are separated by spaces (quotes group words) and every term must hold:

- a word matches a run's name, id, tags or note (case-insensitive, any part of them);
- `FIELD:VALUE[,VALUE...]` with FIELD one of status, tag, kind, host, name, id: any of the values;
- `KEY OP VALUE`, OP one of `<` `<=` `>` `>=` `=` `!=`, compares a run field (`strategy`, `status`,
  `kind`...), a config key (`train.lr`, or its last part, `lr`), a result (`val_acc`, `loss`: the latest;
  `best.val_acc`, `best.val_loss`; `last.X`); order comparisons need numbers; a run without the key
  does not match;
- a leading `-` negates a term (`-tag:old`).

A summary is the run index's (`trainconsole.protocol.index.Summary`): its `row` (the ls row), `best`
and
`config` (dotted keys).
"""

from __future__ import annotations

import functools
import json
import operator
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainconsole.protocol import KINDS, STATUSES, index
from trainconsole.protocol.run_files import loads

Summary = index.Summary
FIELDS = ("status", "tag", "kind", "host", "name", "id")
ROW_KEYS = frozenset({"id", "name", "kind", "strategy", "status", "host", "note"})
ORDERS: dict[str, Callable[[Any, Any], bool]] = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
                                                 ">=": operator.ge}
COMPARISON = re.compile(r"([A-Za-z_][\w.]*)(<=|>=|!=|==|=|<|>)(.*)")


class FilterError(ValueError):
    """A filter that cannot be read; the message names the term and what is allowed."""


@dataclass(frozen=True)
class Term:
    """One term: a test of a summary, and whether it is negated."""

    text: str
    test: Callable[[Summary], bool]
    negated: bool = False

    def holds(self, summary: Summary) -> bool:
        """Whether the summary passes this term."""
        return self.test(summary) != self.negated


@dataclass(frozen=True)
class Filter:
    """A parsed filter: all its terms must hold (no terms: every run)."""

    terms: tuple[Term, ...]

    def matches(self, summary: Summary) -> bool:
        """Whether a run (its index summary) passes the filter."""
        return all(term.holds(summary) for term in self.terms)


def parse(text: str) -> Filter:
    """Read a filter (FilterError, naming the term, if it cannot be read)."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise FilterError(f"filter: {text!r}: {e} (quote a term with matching quotes)") from None
    return Filter(tuple(_term(word) for word in words))


def _term(word: str) -> Term:
    negated = word.startswith("-") and len(word) > 1
    body = word[1:] if negated else word
    comparison = COMPARISON.fullmatch(body)
    if comparison:
        return Term(word, _comparison(word, *comparison.groups()), negated)
    if body[:1] in "<>=!":
        raise FilterError(f"filter: {word!r}: a comparison needs a key before its operator (like lr<0.1)")
    field, colon, value = body.partition(":")
    if colon:
        return Term(word, _field(word, field.lower(), value), negated)
    return Term(word, lambda s: _mentions(s, body.lower()), negated)


def _field(word: str, field: str, value: str) -> Callable[[Summary], bool]:
    wanted = [v.strip().lower() for v in value.split(",") if v.strip()]
    if field not in FIELDS:
        raise FilterError(f"filter: {word!r}: unknown field {field!r} (one of {', '.join(FIELDS)}; "
                          "or a comparison like lr<0.1)")
    if not wanted:
        raise FilterError(f"filter: {word!r}: {field}: needs a value (like {field}:{_example(field)})")
    allowed = {"status": STATUSES, "kind": KINDS}.get(field)
    for value in wanted:
        if allowed and value not in allowed:
            raise FilterError(f"filter: {word!r}: {field} is one of {', '.join(allowed)}")
    if field == "tag":
        return lambda s: any(t.lower() in wanted for t in s.row.get("tags") or [])
    return lambda s: str(s.row.get(field) or "").lower() in wanted


def _example(field: str) -> str:
    return {"status": "failed", "kind": "tune", "tag": "baseline", "host": "gpu1"}.get(field, "x")


def _comparison(word: str, key: str, op: str, raw: str) -> Callable[[Summary], bool]:
    if raw == "":
        raise FilterError(f"filter: {word!r}: a comparison needs a value after {op!r} (like {key}{op}0.1)")
    want = _value(raw)
    if op in ORDERS:
        if not isinstance(want, float):
            raise FilterError(f"filter: {word!r}: {op} needs a number (got {raw!r})")
        order = ORDERS[op]
        return lambda s: any(isinstance(v, float) and order(v, want) for v in values_of(s, key))

    def same(s: Summary) -> bool:
        return any(v == want for v in values_of(s, key))

    return same if op in ("=", "==") else (lambda s: bool(values_of(s, key)) and not same(s))


def _value(raw: str) -> float | str:
    """A filter's value: a number where it reads as one, else lower-case text."""
    try:
        return float(raw)
    except ValueError:
        return raw.lower()


def values_of(summary: Summary, key: str) -> list[float | str]:
    """What a key names in a run: a row field, a config key (dotted, or by its last part: any section's),
    `best.X` / `last.X`, else the latest result; numbers as floats, the rest as lower-case text."""
    section, _, name = key.partition(".")
    if key in ROW_KEYS:
        found = [summary.row.get(key)]
    else:
        exact, in_config = _config_hit(summary, key)
        if exact:
            found = in_config
        elif name and section in ("best", "last"):
            found = [(summary.best if section == "best" else summary.row.get("last") or {}).get(name)]
        else:
            found = in_config or [(summary.row.get("last") or {}).get(key)]
    return [_comparable(v) for v in found if v is not None and not isinstance(v, (list, dict))]


def _config_hit(summary: Summary, key: str) -> tuple[bool, list[Any]]:
    """Whether `key` is one of the run's config keys, and what the config gives it: its value, else the
    values of the keys whose last part it is ([] if none). Read from the config's JSON text in the run's
    details (`Summary.config_text`), once per distinct text and key (runs of one config file share it)."""
    config = summary.config_text
    found = None if config is None else _text_hit(config, key)
    return _hit(summary.config, key) if found is None else found


@functools.lru_cache(maxsize=4096)
def _text_hit(config: str, key: str) -> tuple[bool, list[Any]] | None:
    """`_config_hit` of a config's JSON text: not decoded where the text cannot name the key (a config key
    is written `"train.lr": ` there); None where the text is not a config's."""
    exact, last = _needles(key)
    if exact not in config and last not in config:
        return False, []
    found = loads(config)
    return _hit(found, key) if isinstance(found, dict) else None


def _hit(config: dict[str, Any], key: str) -> tuple[bool, list[Any]]:
    if key in config:
        return True, [config[key]]
    return False, [v for k, v in config.items() if k.rpartition(".")[2] == key]


@functools.lru_cache(maxsize=256)
def _needles(key: str) -> tuple[str, str]:
    """How a config key `key`, and one ending in `.key`, begin and end in JSON text (`json.dumps`')."""
    text = json.dumps(key)[1:-1]
    return f'"{text}": ', f'.{text}": '


def _comparable(value: Any) -> float | str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return float(value)
    return _value(str(value))


def _mentions(summary: Summary, word: str) -> bool:
    row = summary.row
    texts = [row.get("id"), row.get("name"), row.get("note"), *(row.get("tags") or [])]
    return any(word in str(t).lower() for t in texts if t)
