"""The Hugging Face Trainer's log lines, read exactly (stdlib only, pure; transformers is not needed).

At each logging step the Trainer's ProgressCallback writes `str(logs)` above its tqdm bar
(transformers 4: `{'loss': 0.51, 'grad_norm': 1.2, 'learning_rate': 4e-05, 'epoch': 0.5}`; 5 writes each
float as a string of 4 significant digits: `{'loss': '0.6947', 'learning_rate': '4.792e-05', 'epoch':
'0.1667'}`), and PrinterCallback prints the same dict when tqdm is off. Evaluations are `{'eval_loss':
..., 'eval_runtime': ..., 'epoch': 1.0}`, and the end of training one summary `{'train_runtime': ...,
'train_loss': ..., 'epoch': 3.0}`. The dict
holds no step: it is the count the training bar shows when tqdm redraws it right after the line
(`Parsed.step_from_bar`). Numbers are Python reprs, sometimes wrapped (`np.float64(0.5)`, `tensor(0.5)`).
"""

from __future__ import annotations

import ast
import re

from .json_lines import from_numbers
from .lines import NUM
from .parsed import Parsed

DICT = re.compile(r"^\{'[A-Za-z_][\w/]*': .*\}$")
#: numpy 2 and torch reprs around a number: the number.
WRAPPED = re.compile(r"\b(?:np\.)?(?:float|int)\d*\((?P<v>[^()]*)\)|\btensor\((?P<t>[^(),]*)[^()]*\)")
#: Keys the Trainer logs: a dict without any of them is someone else's.
TRAINER_KEYS = {"loss", "learning_rate", "grad_norm", "eval_loss", "train_runtime", "eval_runtime", "epoch"}
SUMMARY_KEY = "train_runtime"
NUMBER = re.compile(NUM)


def read(text: str) -> Parsed | None:
    """The fields of one Trainer log line, or None if it is not one."""
    text = text.strip()
    if not DICT.match(text):
        return None
    try:
        logs = ast.literal_eval(WRAPPED.sub(lambda m: m["v"] or m["t"], text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(logs, dict) or not TRAINER_KEYS & logs.keys():
        return None
    logs = {k: _number(v) for k, v in logs.items()}
    summary = SUMMARY_KEY in logs
    parsed = from_numbers({k: v for k, v in logs.items() if not (summary and k == "train_loss")}, "hf")
    if summary and isinstance(logs.get("train_loss"), float):
        parsed.result["train_loss"] = logs["train_loss"]  # the mean over training, not a step's
    parsed.step_from_bar = True
    return parsed if parsed.metrics or parsed.timing else None


def _number(value: object) -> object:
    """A number, or a string of one (transformers 5's `'0.6947'`), as a float; anything else as it is."""
    if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
        return float(value)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
