"""Steps are counted as a script takes them: `report()` by step, not by call; a tqdm bar by its own count,
not by its refreshes; and a long line is never cut inside a number."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from script_helpers import assert_last_states, cli, of_type

from trainconsole.protocol import EventWriter
from trainconsole.trainers.scripts.output import MAX_LINE, OutputEvents, Pump
from trainconsole.trainers.scripts.report import Reporter

TQDM_SCRIPT = """
import sys, time
from tqdm import tqdm

for epoch in range(2):
    bar = tqdm(range(50), file=sys.stderr, mininterval=0.05)
    for i in bar:
        time.sleep(0.01)
        bar.set_postfix(loss=round(1.0 / (epoch * 50 + i + 1), 5))
    bar.close()
    print(f"epoch {epoch + 1} val_loss: {0.5 - epoch / 10}", file=sys.stderr, flush=True)
"""


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_report_counts_steps_not_calls(tmp_path: Path) -> None:
    reporter = Reporter(EventWriter(tmp_path / "events.jsonl", "r"), interval=3600)
    for loss in (1.0, 3.0):  # two training steps, each reporting loss and lr in separate calls
        reporter(loss=loss)
        reporter(lr=0.1)
    reporter(step=7, loss=5.0)  # an explicit step, then more of the same step
    reporter(step=7, lr=0.2)
    reporter.flush()
    (event,) = [e for e in read(tmp_path / "events.jsonl") if e["type"] == "step"]
    assert event["step"] == 7 and event["count"] == 3
    assert event["loss"] == 3.0 and event["lr"] == (0.1 + 0.1 + 0.2) / 3


def test_a_tqdm_bar_counts_its_iterations_not_its_refreshes(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TQDM_SCRIPT)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    steps = of_type(home, run_id, "step")
    numbers = [e["step"] for e in steps]
    assert 4 <= len(numbers) <= 100 and max(numbers) == 100 and 50 in numbers, numbers  # bar 1 ends at 50
    # each count carries the last state tqdm drew at it (set_postfix redraws a count with newer values)
    assert_last_states(steps, (home / "runs" / run_id / "stderr.log").read_text(), 50)
    evals = of_type(home, run_id, "eval")
    assert [(e["step"], e["val_loss"]) for e in evals] == [(50, 0.5), (100, 0.4)]


def test_a_line_longer_than_the_limit_is_never_cut_inside_a_number(tmp_path: Path) -> None:
    events = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [])
    read_fd, write_fd = os.pipe()
    log = os.open(os.devnull, os.O_WRONLY)
    pump = Pump(read_fd, log, events.stdout)
    pump.start()
    filler = b"a" * (MAX_LINE - 6)
    os.write(write_fd, filler + b" loss: 0.")  # the limit falls inside the number
    time.sleep(0.3)  # the pump reads what is there before the rest of the line arrives
    os.write(write_fd, b"51234\n")
    os.close(write_fd)
    pump.join(timeout=10)
    os.close(log)
    os.close(read_fd)
    assert not pump.is_alive() and threading.active_count() >= 1
    steps = [e for e in read(tmp_path / "events.jsonl") if e["type"] == "step"]
    assert [e["loss"] for e in steps] == [0.51234]
