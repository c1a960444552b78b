"""The printed-line metric parser and the stderr traceback watch (pure)."""

from __future__ import annotations

import re

import pytest

from trainconsole.trainers.scripts.lines import parse
from trainconsole.trainers.scripts.parsed import Where
from trainconsole.trainers.scripts.tracebacks import TracebackWatch, hint

CASES = [
    ("Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.123456", {"loss": 0.123456}, {},
     {"epoch": 1, "counter": 640, "total": 60000, "samples": True}),
    ("Test set: Average loss: 0.0334, Accuracy: 9890/10000 (99%)", {},
     {"val_loss": 0.0334, "val_acc": 0.989}, {}),
    ("Epoch [2/10], Step [100/600], Loss: 0.2211", {"loss": 0.2211}, {},
     {"epoch": 2, "epochs": 10, "counter": 100, "total": 600}),
    ("epoch 3 loss 0.5 acc 0.7", {"loss": 0.5, "acc": 0.7}, {}, {"epoch": 3}),
    ("[12/100] loss=0.3", {"loss": 0.3}, {}, {"counter": 12, "total": 100}),
    ("Epoch 3", {}, {}, {"epoch": 3}),
    ("iter 40 train/loss=0.1 lr=0.01", {"loss": 0.1, "lr": 0.01}, {}, {"counter": 40}),
    ("loss: 0.2 - accuracy: 0.9 - val_loss: 0.3 - val_accuracy: 0.88",
     {"loss": 0.2, "acc": 0.9}, {"val_loss": 0.3, "val_acc": 0.88}, {}),
    ("Validation: loss 0.4 acc: 97.5%", {}, {"val_loss": 0.4, "val_acc": 0.975}, {}),
    ("epoch 1: 100%|####| 10/10 [00:01<00:00, 8.5it/s, loss=0.123]", {"loss": 0.123}, {}, {"epoch": 1}),
    ("Namespace(batch_size=64, epochs=14, lr=1.0)", {}, {}, {}),
    ("Using device: 0", {}, {}, {}),
]


@pytest.mark.parametrize(("line", "step", "evals", "where"), CASES)
def test_default_patterns(line: str, step: dict, evals: dict, where: dict) -> None:
    parsed = parse(line)
    assert (parsed.step, parsed.eval, parsed.where) == (step, evals, Where(**where))


def test_user_pattern_groups_become_fields_and_make_a_metric_line() -> None:
    patterns = [re.compile(r"objective (?P<objective>\S+)"), re.compile(r"ppl=(?P<perplexity>\S+)")]
    parsed = parse("it 7 objective 0.125 ppl=3.5", patterns)  # defaults still apply: ppl=3.5 too
    assert parsed.step == {"objective": 0.125, "ppl": 3.5}  # `perplexity` is named `ppl`
    assert parse("nothing here", patterns).step == {}


def feed(text: str) -> TracebackWatch:
    watch = TracebackWatch()
    for line in text.splitlines():
        watch.feed(line)
    return watch


def test_traceback_cause_is_the_exception_line_and_skips_torchrun_wrappers() -> None:
    rank = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"t.py\", line 3, in <module>\n"
            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    agent = ("Traceback (most recent call last):\n  File \"run.py\", line 9\n"
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n=====\n")
    watch = feed("some output\n" + rank + agent)
    assert watch.cause == "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert "t.py" in watch.traceback
    assert "out of memory" in hint(watch.cause)


def test_chained_traceback_gives_the_last_exception_and_no_traceback_gives_none() -> None:
    chained = ("Traceback (most recent call last):\n  x\nKeyError: 'a'\n\nDuring handling of the above "
               "exception, another exception occurred:\n\nTraceback (most recent call last):\n  y\n"
               "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\n")
    watch = feed(chained)
    assert watch.cause.startswith("RuntimeError: mat1 and mat2") and "shape" in hint(watch.cause)
    assert feed("Error: this is only a printed line\n").cause is None
