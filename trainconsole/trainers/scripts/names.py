"""What a printed key means: its event field, and whether it is a metric, a timing or a place (pure).

Every reader of script output (the printed-line guesses and the structured formats) names fields here, so
`Acc@1`, `valid loss`, `eval_loss` and `ms/batch` mean the same thing whoever read them.
"""

from __future__ import annotations

import re
from functools import lru_cache

ALIASES = {
    "train_loss": "loss", "training_loss": "loss", "validation_loss": "val_loss", "accuracy": "acc",
    "train_acc": "acc", "train_accuracy": "acc", "learning_rate": "lr", "perplexity": "ppl",
    "iter": "step", "iteration": "step", "global_step": "step", "batch_idx": "batch", "it": "step",
    "d_g_z1": "d_g_z", "d_x_": "d_x", "data": "data_time", "batch_time": "time", "batch_id": "batch",
    "dur": "time_s",  # skorch's history: an epoch's duration in seconds
}
#: Prefixes that name an evaluation (`valid loss`, `eval_acc`) or a test result (`test ppl`).
EVAL_PREFIXES = ("val_", "valid_", "validation_", "eval_", "dev_")
TEST_PREFIXES = ("test_",)
#: A place in training, not a metric: epoch, the step and counters that are the step.
COUNTERS = ("step", "batch", "batches", "episode")
#: Words that make a name a model metric (and a line that has one a metric line).
METRIC_WORDS = ("loss", "acc", "ppl", "f1", "auc", "error", "bleu", "top1", "top5", "d_x", "d_g_z",
                "psnr", "ssim", "iou", "map", "mse", "mae", "rmse", "reward", "score", "grad_norm")
#: Names that measure time or speed: kept in an event's `timing`, never plotted as a loss.
TIMING = re.compile(r"(^|_)(time|eta|elapsed|runtime|dt)(_(ms|s|us))?$|\w_per_\w|(^|_)(ms|sec|secs|seconds)$")
#: A key that is a unit per unit (`ms/batch`, `s/it`, `it/s`, `samples/s`): a speed, named `x_per_y`.
UNIT_RATE = re.compile(r"^(ms|s|us|sec|it|its|samples?|tokens?|img|imgs|images?|steps?|batch(?:es)?)"
                       r"/(s|sec|it|step|batch|epoch|iter)$", re.IGNORECASE)
RESERVED = ("v", "t", "run", "type", "rank", "local_rank")
SEPARATOR = re.compile(r"[^a-z0-9_@]+")
AVERAGE = re.compile(r"^(average|avg|mean)_")


@lru_cache(maxsize=4096)  # a script prints the same keys again and again
def name(key: str) -> str:
    """The event field for a printed key: lower case, `_` for separators, common aliases mapped
    (`Acc@1` -> `acc@1`, `D(G(z))` -> `d_g_z`, `ms/batch` -> `ms_per_batch`, `valid loss` -> `val_loss`)."""
    key = key.strip()
    if UNIT_RATE.match(key):
        key = key.replace("/", "_per_")
    key = SEPARATOR.sub("_", key.lower()).strip("_")
    key = AVERAGE.sub("", key)
    key = ALIASES.get(key, key)
    for prefix in EVAL_PREFIXES:
        if key.startswith(prefix):
            return "val_" + ALIASES.get(key[len(prefix):], key[len(prefix):])
    for prefix in TEST_PREFIXES:  # `test_accuracy` -> test_acc, as val_accuracy -> val_acc
        if key.startswith(prefix):
            return prefix + ALIASES.get(key[len(prefix):], key[len(prefix):])
    return key


def is_epoch(field: str) -> bool:
    """`epoch`, `Train Epoch`, `end of epoch`: the epoch, not a metric."""
    return field == "epoch" or field.endswith("_epoch")


@lru_cache(maxsize=4096)
def is_timing(field: str) -> bool:
    """A time or speed (`time`, `ms_per_batch`, `it_per_s`, `eval_runtime`)."""
    return bool(TIMING.search(field))


@lru_cache(maxsize=4096)
def is_metric(field: str) -> bool:
    """A model metric: names a loss, an accuracy, a perplexity, ... and is not a time."""
    return any(w in field for w in METRIC_WORDS) and not is_timing(field)


@lru_cache(maxsize=4096)
def kind(field: str) -> str:
    """Where a named field goes: `epoch`, `counter`, `timing`, `val`, `test`, `drop` or `metric`."""
    if is_epoch(field):
        return "epoch"
    if field in COUNTERS:
        return "counter"
    if field in RESERVED:
        return "drop"
    if is_timing(field):
        return "timing"
    if field.startswith("val_"):
        return "val"
    return "test" if field.startswith(TEST_PREFIXES) else "metric"
