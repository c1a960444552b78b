"""Metrics guessed from a script's printed lines, in the spirit of Guild's output scalars (stdlib only, pure).

Read where no structured format claims a line (see `formats.py`). Default patterns: `key: value`,
`key=value`, `loss 0.123`, fields between `|` or tabs (`| ms/batch 911.0 | loss 8.56 | ppl 5215`,
`Loss 1.18e+01 (1.06e+01)`: the value, not its average), and places: `[a/b][c/d]` (epoch a, position c of
d), `Epoch [2/10]`, `Epoch: [0][ 11/160]`, `20/ 310 batches`, `Batch 5`, `after 343 batches`,
`Train Epoch: 2 [640/60000 (1%)]` (a position that may count samples). A line naming a rank (`Rank 1,`,
torchrun's `[rank1]:` / `[default1]:`) says so. Names map to event fields in `names.py`; a line on an
evaluation (`Test set:`, `valid loss`) gives `val_*` fields, one printed after training (`End of
training | test loss`) `test_*` results. A line yields events only if it holds a metric.
"""

from __future__ import annotations

import re
from typing import Any

from .names import is_metric, kind, name
from .parsed import Parsed, Where, sort
from .plain import plain

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
KEY = r"[A-Za-z][\w./@-]*(?: ?\((?:[^()\s]|\([^()\s]*\))*\))?"  # also D(x), D(G(z)), Acc@1, train/loss
#: `loss: 0.5`, `lr=0.1`; `(?!s\d)`: not `Tot: 1s5ms` (a time in two units).
KEY_VALUE = re.compile(rf"(?<![\w./(-])(?P<key>{KEY})\s*[:=]\s*(?P<value>{NUM})(?!s\d)"
                       rf"(?:\s*/\s*(?P<of>{NUM}))?(?P<pct>%)?")
WORD_VALUE = re.compile(rf"(?:\b(?P<qual>train|training|val|valid|validation|test|eval)[\s_])?"
                        rf"\b(?P<key>(?:epoch|step|iter|iteration|batch|loss|acc|accuracy|lr|ppl|perplexity|"
                        rf"top[15]|acc@\d)[\w@]*)\s+(?P<value>{NUM})(?![\w/.])", re.IGNORECASE)
#: `val_loss 0.79`, `psnr 23.1`, `loss_G 1.2`: a name, spaces, its value (taken when the name is a metric's).
NAME_VALUE = re.compile(rf"(?<![\w./(-])(?P<key>[A-Za-z][\w@]*)\s+(?P<value>{NUM})(?![\w/.:])")
#: `Accuracy of the network on the 10000 test images: 54 %`: a metric word, words, then its value.
LEAD = re.compile(rf"^\s*(?P<key>accuracy|acc|loss|error)\b[^:=]{{0,80}}?:\s*(?P<value>{NUM})\s*(?P<pct>%)?",
                  re.IGNORECASE)
#: A time with its unit (nanoGPT's `time 120.50ms`).
TIMED = re.compile(rf"\b(?P<key>time|dt|elapsed)\s*[:=]?\s*(?P<value>{NUM})\s?(?P<unit>ms|s)\b",
                   re.IGNORECASE)
#: One field between `|` or tabs: `valid loss  6.69`, `time:  49.81s`, `Acc@1   0.00 (  0.00)`.
SEGMENT = re.compile(rf"^\s*(?P<key>[A-Za-z][\w@/() .-]*?)\s*:?\s+(?P<value>{NUM})\s*(?P<unit>ms|s|%)?"
                     rf"\s*(?:\(\s*{NUM}\s*\))?\s*$")
#: `[1,  2000] loss: 2.196` (the PyTorch CIFAR-10 tutorial): epoch, then the position in it.
PAIR = re.compile(r"\[\s*(?P<epoch>\d+)\s*,\s*(?P<value>\d+)\s*\]")
BRACKET = re.compile(r"(?:\b(?P<key>[A-Za-z]\w*)\s*:?\s*)?\[\s*(?P<value>\d+)\s*(?:/\s*(?P<of>\d+)\s*)?"
                     r"(?P<pct>\(\s*\d+(?:\.\d*)?%\)\s*)?\]")
PLACE = re.compile(r"\b(?P<key>epoch|step|iter|iteration|batch|batch_idx|global_step|episode)\b\s*[:=#]?\s*"
                   r"(?P<value>\d+)(?:\s*/\s*(?P<of>\d+))?(?![\d.])", re.IGNORECASE)
COUNT_OF = re.compile(r"(?<![\w.])(?P<value>\d+)\s*/\s*(?P<of>\d+)\s+(?P<key>batches|batch|steps|iters)\b")
AFTER = re.compile(r"\bafter\s+(?P<value>\d+)\s+(?P<key>batches|steps|iterations|iters)\b", re.IGNORECASE)
#: A rate after its value (tqdm's `8.5it/s`, Keras' `5ms/step`).
RATE = re.compile(rf"(?<![\w.])(?P<value>{NUM})\s?(?P<key>(?:ms|s|us)/(?:it|step|batch|epoch)|it/s|"
                  rf"samples/s|img/s|tokens/s)(?![\w/])")
RANK = re.compile(r"^\s*\[(?:rank|default)(?P<prefix>\d+)\]:\s?|\brank\s*[:=#]?\s*(?P<named>\d+)\b[,:]?",
                  re.IGNORECASE)
#: `train 0.41 valid 0.52`: a split named with its value alone (a loss, unless the line speaks of accuracy).
SPLIT_VALUE = re.compile(rf"\b(?P<split>train|training|valid|val|validation|test)\s*[:=]?\s+(?P<value>{NUM})"
                         rf"(?![\w/.])", re.IGNORECASE)
#: `train loss: 2.1 test loss: 2.3`: a split, a metric, a colon, its value.
SPLIT_KEY = re.compile(rf"\b(?P<qual>train|training|val|valid|validation|test)\s+"
                       rf"(?P<key>loss|acc|accuracy|ppl|perplexity)\s*:\s*(?P<value>{NUM})(?P<pct>\s*%)?",
                       re.IGNORECASE)
#: `Accuracy on training set`, `Loss on the test data`: a metric, then the split it was measured on.
ON_SPLIT = re.compile(r"^(?P<key>accuracy|acc|loss|error|ppl|perplexity)\s+(?:on|of)\s+(?:the\s+)?"
                      r"(?P<qual>train|training|val|valid|validation|test|dev)(?:\s+(?:set|data|split|images))?$",
                      re.IGNORECASE)
SEPARATORS = re.compile(r"[|\t]")
#: A logger's prefix (`INFO: `, `INFO:root:`, `2024-01-01 10:00:00,123 - INFO - `): no part of a name.
LOG_PREFIX = re.compile(r"^\s*(?:\[?\d{4}-\d\d-\d\d[ T][\d:.,]+\]?\s*[-|]?\s*)?"
                        r"\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\]?(?::[\w.]+)?(?:\s*[-|:]\s*|:)")
#: tqdm's percentage and bar (`Validation round:  43%|####3     |`): progress, never a metric.
TQDM_BAR = re.compile(r"\d{1,3}%\|[^|]*\|")
TIME_WORDS = re.compile(r"time|dt|elapsed", re.IGNORECASE)
PLACE_WORDS = re.compile(r"epoch|step|iter|batch|episode")
NUMBER_IN_KEY = re.compile(r"\s[\d.]")
EVAL_LINE = re.compile(r"\b(test|val|valid|validation|eval|evaluation|evaluating)\b", re.IGNORECASE)
FINAL_LINE = re.compile(r"\b(end of training|after training|final test|test results?)\b", re.IGNORECASE)
#: Training is over: what follows is a result (`Finished Training`, `Training complete`).
TRAINING_DONE = re.compile(r"\b(finished training|training (?:is )?(?:complete|completed|finished|done)|"
                           r"end of training)\b", re.IGNORECASE)


def parse(line: str, patterns: list[re.Pattern[str]] = (), evaluating: bool = False,  # type: ignore[assignment]
          trained: bool = False) -> Parsed:
    """What one printed line says (see the module docstring). EVALUATING: the script is in an evaluation
    (its progress lines or heading came before), so a plain metric line is the evaluation's result;
    TRAINED: training is over, so an evaluation is a test result."""
    text = _bare(plain(line))
    where, text = _rank(text)
    eval_line = bool(EVAL_LINE.search(text))
    found = _fields(text, where, eval_line)
    user = _user_fields(text, patterns)
    eval_line = eval_line or (evaluating and where.counter is None)
    final = bool(FINAL_LINE.search(text)) or (trained and eval_line)
    parsed = sort({**found, **user}, Parsed(where=where), eval_line, final)
    if not user and not any(is_metric(k) for k in parsed.step):
        parsed.step.clear()  # `epoch 3 lr 0.1`, or `val_loss: 0.3 lr: 0.1`: no training metric
    return parsed


def _bare(text: str) -> str:
    """TEXT without a tqdm bar's percentage and bar, and without a logger's prefix."""
    text = TQDM_BAR.sub(" | ", text) if "%|" in text else text
    logged = "INFO" in text or "WARN" in text or "DEBUG" in text or "ERROR" in text
    return LOG_PREFIX.sub("", text, count=1) if logged else text


def evaluation_progress(line: str, parsed: Parsed) -> bool:
    """Whether a line is one batch of an evaluation under way (`Test: [ 10/157] ...`, a position of a
    total): it never moves the run's step, and the result that follows it is the evaluation's."""
    where = parsed.where
    return where.total is not None and where.counter is not None and bool(EVAL_LINE.search(line))


def evaluation_heading(line: str, parsed: Parsed) -> bool:
    """`Test Error: ` on a line of its own: the evaluation's result comes on the next line."""
    return not parsed.metrics and line.rstrip().endswith(":") and bool(EVAL_LINE.search(line))


def training_done(line: str) -> bool:
    """Whether a line says training is over (what is evaluated after it is a test result)."""
    return bool(TRAINING_DONE.search(line))


def _rank(text: str) -> tuple[Where, str]:
    low = text.lower()
    match = RANK.search(text) if ("rank" in low or "[default" in low) else None
    if not match:
        return Where(), text
    rank = int(match["prefix"] or match["named"])
    return Where(rank=rank), text[:match.start()] + " " + text[match.end():]


def _fields(text: str, where: Where, eval_line: bool) -> dict[str, float]:
    found: dict[str, float] = {}
    _places(text, where)
    for segment in SEPARATORS.split(text) if ("|" in text or "\t" in text) else [text]:
        _segment(segment, found, eval_line)
    for match in SPLIT_VALUE.finditer(text):
        metric = "acc" if "acc" in text.lower() and "loss" not in text.lower() else "loss"
        split = match["split"].lower()
        key = f"train_{metric}" if split.startswith("train") else name(f"{split}_{metric}")
        found.setdefault(key, float(match["value"]))  # `train_loss` stays the train split's
    for match in RATE.finditer(text) if "/" in text else ():
        found.setdefault(name(match["key"]), float(match["value"]))
    for match in TIMED.finditer(text) if TIME_WORDS.search(text) else ():
        found.setdefault(f"{name(match['key'])}_{match['unit'].lower()}", float(match["value"]))
    for key in [k for k in found if kind(k) in ("epoch", "counter")]:
        value = found.pop(key)  # `| epoch 3 |`, `Batch 5`: places, read by `_places` where they are whole
        if kind(key) == "epoch" and where.epoch is None:
            where.epoch = int(value) if value == int(value) else value
    return found


def _segment(segment: str, found: dict[str, float], eval_line: bool) -> None:
    split = list(SPLIT_KEY.finditer(segment)) if ":" in segment else []
    if split:  # `step 500 train loss: 2.1 test loss: 2.3`: each split's own, none a bare `loss`
        for match in split:
            _take(match, found, eval_line)
        _split_rest(segment, split, found, eval_line)
        return
    whole = SEGMENT.match(segment)
    if whole and not NUMBER_IN_KEY.search(whole["key"]):  # `epoch 1: 100%` is no key `epoch 1`
        value, unit = float(whole["value"]), whole["unit"]
        unit_key = f"_{unit}" if unit in ("s", "ms") else ""  # `time: 49.81s`
        key = _whole_key(whole["key"], eval_line) + unit_key
        found.setdefault(key, percent(value) if unit == "%" else value)
        return
    lead = LEAD.match(segment)
    if lead:
        _take(lead, found, eval_line)
    taken: list[tuple[int, int]] = [lead.span()] if lead else []
    for regex in (KEY_VALUE, WORD_VALUE):
        for match in regex.finditer(segment, lead.end() if lead else 0):
            _take(match, found, eval_line)
            taken.append(match.span())
    for match in NAME_VALUE.finditer(segment, lead.end() if lead else 0):
        if not any(a < match.end() and match.start() < b for a, b in taken) and _named_metric(match["key"]):
            _take(match, found, eval_line)


def _named_metric(key: str) -> bool:
    """Whether a word before a value names a metric (`val_acc 0.8`), not `the 10000` of a sentence."""
    field = name(key)
    return is_metric(field) or field == "lr"


def _take(match: re.Match[str], found: dict[str, float], eval_line: bool = False) -> None:
    key, value = _key(match, eval_line), float(match["value"])
    of = match.groupdict().get("of")
    if of is not None and kind(key) not in ("epoch", "counter"):
        if match["value"].isdigit() and of.isdigit() and 0 < float(of):
            value = float(f"{value / float(of):.12g}")  # `Accuracy: 9890/10000`
        else:
            found.setdefault(key + "_2", float(of))  # dcgan's `D(G(z)): 0.11 / 0.15`: before / after
    elif match.groupdict().get("pct"):
        value = percent(value)
    found.setdefault(key, value)


def _split_rest(segment: str, split: list[re.Match[str]], found: dict[str, float], eval_line: bool) -> None:
    """The other `key: value` fields of a line with splits: `Test Loss: 0.3, Acc: 0.9` is the test split's
    accuracy too (a bare metric takes the split named last before it)."""
    for match in KEY_VALUE.finditer(segment):
        if any(s.start() <= match.start() < s.end() for s in split):
            continue
        before = [s for s in split if s.end() <= match.start()]
        qualified = before and SPLIT_KEY.match(f"{before[-1]['qual']} {match['key']}: {match['value']}")
        _take(qualified or match, found, eval_line)


def _whole_key(key: str, eval_line: bool) -> str:
    """A segment's key; `Accuracy on training set` is the train split's accuracy (`train_acc`), as
    `Accuracy on test set` is `test_acc`."""
    on = ON_SPLIT.match(key.strip())
    return _key(on, eval_line or on["qual"].lower().startswith("train")) if on else name(key)


def _key(match: re.Match[str], eval_line: bool) -> str:
    """The field of a match; on an evaluation line a `train loss` stays the train split's (nanoGPT's
    `step 250: train loss 2.1, val loss 2.2` evaluates both)."""
    qual = (match.groupdict().get("qual") or "").lower()
    if qual.startswith("train") and eval_line:
        return "train_" + name(match["key"])
    return name(f"{qual}_{match['key']}" if qual else match["key"])


def _places(text: str, where: Where) -> None:
    """Epoch and position: brackets first (`[0/5][124/125]`, `Epoch: [0][ 11/160]`), then words."""
    pair = PAIR.search(text) if "[" in text else None
    if pair:
        where.epoch, where.counter = int(pair["epoch"]), int(pair["value"])
    brackets = list(BRACKET.finditer(text)) if "[" in text else []
    for i, match in enumerate(brackets):
        key = name(match["key"]) if match["key"] else ""
        follows = i + 1 < len(brackets) and brackets[i + 1].start() - match.end() <= 1
        if kind(key) == "epoch" or (not key and follows and where.epoch is None and where.counter is None):
            _epoch(where, match)
        elif where.counter is None:
            _counter(where, match, samples=bool(match["pct"]))
    for regex in _place_regexes(text):
        for match in regex.finditer(text):
            if kind(name(match["key"])) == "epoch":
                _epoch(where, match) if where.epoch is None else None
            elif where.counter is None:
                _counter(where, match)


def _place_regexes(text: str) -> list[re.Pattern[str]]:
    """Those of PLACE, COUNT_OF and AFTER that may match: the cheap test first (a line is read on every
    flush of the script's output)."""
    low = text.lower()
    return [regex for regex, present in ((PLACE, PLACE_WORDS.search(low)), (COUNT_OF, "/" in low),
                                        (AFTER, "after" in low)) if present]


def _epoch(where: Where, match: re.Match[str]) -> None:
    if where.epoch is None:
        where.epoch = int(match["value"])
        where.epochs = int(match["of"]) if match.groupdict().get("of") else where.epochs


def _counter(where: Where, match: re.Match[str], samples: bool = False) -> None:
    where.counter = int(match["value"])
    where.total = int(match["of"]) if match.groupdict().get("of") else None
    where.samples = samples


def percent(value: float) -> float:
    """`97.5%` as the fraction 0.975 (rounded off the float noise of the division)."""
    return float(f"{value / 100:.12g}")


def _user_fields(text: str, patterns: list[re.Pattern[str]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pattern in patterns:
        for match in pattern.finditer(text):
            found.update((name(k), float(v)) for k, v in match.groupdict().items() if _is_num(v))
    return found


def _is_num(text: str | None) -> bool:
    return text is not None and re.fullmatch(NUM, text.strip()) is not None


def compile_patterns(patterns: list[str]) -> list[re.Pattern[str]]:
    """The user's `[script] patterns`, compiled (they were checked by the config's validation)."""
    return [re.compile(p) for p in patterns]
