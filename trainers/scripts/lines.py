"""Metrics from a script's printed lines, in the spirit of Guild's output scalars (stdlib only, pure).

Default patterns: `key: value`, `key=value`, `Epoch 3`, `loss 0.123`, `Epoch [1/10]`, `[12/100]`, and so
the pytorch/examples MNIST lines `Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.123` and `Test set: Average
loss: 0.0334, Accuracy: 9890/10000 (99%)`. Names map to event fields (loss, val_loss, acc/accuracy ->
val_acc on an evaluation line, epoch, step/iter -> step, lr); user regexes (named groups) add to them.
A line yields a `step` and/or an `eval` event only if it holds a metric; values are kept as printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
KEY_VALUE = re.compile(
    rf"(?<![\w./-])(?P<key>[A-Za-z][\w./-]*?)\s*[:=]\s*(?P<value>{NUM})(?:\s*/\s*(?P<of>{NUM}))?(?P<pct>%)?"
)
WORD_VALUE = re.compile(
    rf"\b(?P<key>epoch|step|iter|iteration|loss|acc|accuracy|lr)\s+(?P<value>{NUM})(?![\w/])", re.IGNORECASE
)
BRACKET = re.compile(r"(?:\b(?P<key>[A-Za-z]\w*)\s*)?\[\s*(?P<value>\d+)\s*/\s*(?P<of>\d+)\s*\]")
EVAL_LINE = re.compile(r"\b(test|val|valid|validation|eval|evaluation|evaluating)\b", re.IGNORECASE)

ALIASES = {
    "train_loss": "loss", "training_loss": "loss", "valid_loss": "val_loss", "validation_loss": "val_loss",
    "test_loss": "val_loss", "eval_loss": "val_loss", "accuracy": "acc", "train_acc": "acc",
    "train_accuracy": "acc", "val_accuracy": "val_acc", "valid_acc": "val_acc", "valid_accuracy": "val_acc",
    "test_acc": "val_acc", "test_accuracy": "val_acc", "eval_acc": "val_acc", "eval_accuracy": "val_acc",
    "iter": "step", "iteration": "step", "global_step": "step", "learning_rate": "lr",
}
INTEGERS = ("epoch", "step")
#: On an evaluation line, these plain names are the evaluation's metrics.
EVAL_NAMES = {"loss": "val_loss", "acc": "val_acc"}
EVAL_FIELDS = ("val_loss", "val_acc")
#: Names that make a line a metric line (alone, epoch or step only update the context).
METRIC_WORDS = ("loss", "acc", "ppl", "perplexity", "f1", "auc", "error", "bleu", "top1", "top5")
RESERVED = ("v", "t", "run", "type")


@dataclass
class Parsed:
    """What one line says: the `step` and `eval` fields it carries (empty when it has none)."""

    step: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] = field(default_factory=dict)
    context: dict[str, int] = field(default_factory=dict)


def name(key: str) -> str:
    """The event field for a printed key: lower case, `_` for separators, common aliases mapped."""
    key = re.sub(r"[^a-z0-9_@]+", "_", key.lower()).strip("_")
    return ALIASES.get(key, key)


def parse(line: str, patterns: list[re.Pattern[str]] = ()) -> Parsed:  # type: ignore[assignment]
    """The metrics printed on one line (see the module docstring)."""
    found = _defaults(line)
    for pattern in patterns:
        for match in pattern.finditer(line):
            found.update((name(k), float(v)) for k, v in match.groupdict().items() if _is_num(v))
    return _split(found, bool(EVAL_LINE.search(line)), bool(patterns) and _any_match(line, patterns))


def _defaults(line: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for match in BRACKET.finditer(line):
        key = name(match["key"]) if match["key"] else "step"
        found.setdefault(key if key in INTEGERS else "step", float(match["value"]))
    for regex in (KEY_VALUE, WORD_VALUE):
        for match in regex.finditer(line):
            found.setdefault(name(match["key"]), _value(match))
    if "epoch" in found and "step" in found and not _explicit_step(line):
        found["batch"] = found.pop("step")  # `Epoch 2 [12/100]`: a position within the epoch, not a step
    return found


def _explicit_step(line: str) -> bool:
    return bool(re.search(r"\b(step|iter|iteration|global_step)\b", line, re.IGNORECASE))


def _value(match: re.Match[str]) -> float:
    value = float(match["value"])
    if match.groupdict().get("of"):
        of = float(match["of"])
        return value / of if of else value
    return value / 100 if match.groupdict().get("pct") else value


def _split(found: dict[str, float], eval_line: bool, user_match: bool) -> Parsed:
    parsed = Parsed()
    for key in INTEGERS:
        if key in found:
            parsed.context[key] = int(found.pop(key))
    for key in RESERVED:
        found.pop(key, None)
    if not (user_match or any(w in k for k in found for w in METRIC_WORDS)):
        return parsed
    for key, value in found.items():
        key = EVAL_NAMES.get(key, key) if eval_line else key
        target = parsed.eval if key in EVAL_FIELDS or key.startswith("val_") else parsed.step
        target[key] = value
    if parsed.eval and not eval_line and not any(w in k for k in parsed.step for w in METRIC_WORDS):
        parsed.step.clear()  # `val_loss: 0.3 lr: 0.1`: only an evaluation
    if eval_line:
        parsed.eval.update(parsed.step)  # everything on an evaluation line belongs to it
        parsed.step.clear()
    return parsed


def _any_match(line: str, patterns: list[re.Pattern[str]]) -> bool:
    return any(p.search(line) for p in patterns)


def _is_num(text: str | None) -> bool:
    return text is not None and re.fullmatch(NUM, text.strip()) is not None


def compile_patterns(patterns: list[str]) -> list[re.Pattern[str]]:
    """The user's `[script] patterns`, compiled (they were checked by the config's validation)."""
    return [re.compile(p) for p in patterns]
