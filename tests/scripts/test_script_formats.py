"""The structured readers (JSON lines, HF Trainer dicts, Keras bars) and plain text in causes (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainconsole.protocol import EventWriter
from trainconsole.trainers.scripts.formats import read
from trainconsole.trainers.scripts.output import OutputEvents
from trainconsole.trainers.scripts.plain import plain
from trainconsole.trainers.scripts.tracebacks import TracebackWatch

#: What torch 2.14's elastic agent printed here when rank 1 of 2 raised (captured from a real torchrun).
TORCHRUN_FAILURE = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/tmp/fail.py", line 7, in <module>
[rank1]:     raise ValueError("boom on rank one")
[rank1]: ValueError: boom on rank one
W1125 04:44:40.581000 13632 torch/distributed/elastic/multiprocessing/api.py:1028] {sigterm}
E1125 04:44:40.715000 13632 torch/distributed/elastic/multiprocessing/api.py:1002] {failed}
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 386, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
fail.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-25_04:44:40
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 13646)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 13646
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-25_04:44:40
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 13647)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
""".format(sigterm="Sending process 13646 closing signal SIGTERM",
           failed="failed (exitcode: 1) local_rank: 1 (pid: 13647) of binary: /venv/bin/python")


def watch(text: str) -> TracebackWatch:
    w = TracebackWatch()
    for line in text.splitlines():
        w.feed(line)
    return w


def test_torchrun_cause_is_the_root_cause_rank_its_exit_code_and_exception() -> None:
    w = watch(TORCHRUN_FAILURE)
    assert w.cause == "rank 1 exited with code 1: ValueError: boom on rank one"
    assert w.traceback.endswith('raise ValueError("boom on rank one")\nValueError: boom on rank one')


def test_a_rank_killed_by_a_signal_is_said_so() -> None:
    agent = TORCHRUN_FAILURE[TORCHRUN_FAILURE.index("W1125"):]  # the rank died without a traceback
    killed = agent.replace("exitcode  : 1 (pid: 13647)", "exitcode  : -9 (pid: 13647)  (SIGKILL)")
    assert watch(killed).cause == "rank 1 was killed by SIGKILL (exit code -9)"


def test_causes_are_plain_text() -> None:
    coloured = "Traceback (most recent call last):\n  x\n\x1b[1;31mValueError\x1b[0m: \x1b[1mbad\x1b[0m\n"
    assert watch(coloured).cause == "ValueError: bad"
    assert plain("\b\b\r\x1b[1m 3/10\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07") == "\r 3/10 link"


@pytest.mark.parametrize(("line", "reader", "step", "evals", "timing", "where"), [
    ('{"step": 10, "epoch": 1, "loss": 0.5, "val_acc": 0.9, "samples_per_s": 120.0}', "json",
     {"loss": 0.5}, {"val_acc": 0.9}, {"samples_per_s": 120.0}, (10, 1)),
    ("{'loss': np.float64(0.5123), 'grad_norm': tensor(1.25, device='cuda:0'), 'learning_rate': 4e-05, "
     "'epoch': 0.5}", "hf", {"loss": 0.5123, "grad_norm": 1.25, "lr": 4e-05}, {}, {}, (None, 0.5)),
    ("10/10 - 1s - 50ms/step - accuracy: 0.9000 - loss: 0.3100 - val_accuracy: 0.8800 - val_loss: 0.3500",
     "keras", {"acc": 0.9, "loss": 0.31}, {"val_acc": 0.88, "val_loss": 0.35}, {"ms_per_step": 50.0},
     (None, None)),
    ("{not json} loss: 0.5", "guess", {"loss": 0.5}, {}, {}, (None, None)),
])
def test_structured_lines_are_read_exactly(line: str, reader: str, step: dict, evals: dict, timing: dict,
                                           where: tuple) -> None:
    parsed = read(line)
    assert (parsed.reader, parsed.step, parsed.eval, parsed.timing) == (reader, step, evals, timing)
    assert (parsed.where.step, parsed.where.epoch) == where


def test_json_lines_give_the_step_they_state(tmp_path: Path) -> None:
    out = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [])
    for step in (5, 10):
        out.stdout(json.dumps({"step": step, "loss": 1 / step, "val_loss": 2 / step}))
    out.stdout(json.dumps({"samples_per_s": 99.0}))  # a timing alone: no event
    out.close()
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e["step"]) for e in events] == [("step", 5), ("eval", 5), ("step", 10), ("eval", 10)]
    assert [e.get("loss", e.get("val_loss")) for e in events] == [0.2, 0.4, 0.1, 0.2]
