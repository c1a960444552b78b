"""Where steps were still miscounted: a `report()` step written half way, progress counters printed on
lines of their own or around `tqdm.write`, and the first part of a long line (dropped, or cut between a key
and its value)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from script_helpers import assert_last_states, cli, of_type

from trainconsole.protocol import EventWriter
from trainconsole.trainers.scripts.output import MAX_LINE, OutputEvents, Pump

REPORT_SCRIPT = """
import time
from trainconsole.trainers import report

for i in range(1, 401):
    report(loss=float(i))  # a step in two calls: an event due now must not split them
    report(lr=0.5)
    time.sleep(0.001)
"""


def run_script(home: Path, tmp_path: Path, source: str) -> str:
    """Run SOURCE as a script to its end; the run's id."""
    (tmp_path / "train.py").write_text(source)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[0]


def test_report_writes_a_step_whole_never_half_in_each_of_two_events(home: Path, tmp_path: Path) -> None:
    steps = of_type(home, run_script(home, tmp_path, REPORT_SCRIPT), "step")
    assert 2 < len(steps) < 400 and sum(e["count"] for e in steps) == 400
    covered = 0
    for event in steps:  # each event: whole steps covered+1..step, both metrics of each
        reported = range(covered + 1, event["step"] + 1)
        assert event["count"] == len(reported) > 0, (event, covered)
        assert event["loss"] == sum(reported) / len(reported) and event["lr"] == 0.5, event
        covered = event["step"]
    assert covered == 400


TQDM_WRITE_SCRIPT = """
import sys, time
from tqdm import tqdm

for epoch in range(2):
    bar = tqdm(range(50), file=sys.stdout, mininterval=0.02)
    for i in bar:
        time.sleep(0.004)
        bar.set_postfix(loss=round(1.0 / (epoch * 50 + i + 1), 5))
        if i % 10 == 9:  # a message above the bar: the bar is cleared, the line printed, the bar redrawn
            tqdm.write(f"saved a checkpoint at iteration {i + 1}", file=sys.stdout)
    bar.close()
"""

KERAS_LIKE_SCRIPT = """
for epoch in range(2):
    for i in range(1, 51):  # a progress counter on a line of its own, as Keras prints when not on a tty
        print(f"{i}/50 [{'=' * (i // 5)}>] - loss: {1.0 / (epoch * 50 + i)}", flush=True)
"""


NESTED_BARS_SCRIPT = """
import sys, time
from tqdm import tqdm

for epoch in tqdm(range(3), desc="epochs"):  # an outer bar: epochs, no metrics
    bar = tqdm(range(50), desc="batches", leave=False, mininterval=0.02)
    for i in bar:
        time.sleep(0.004)
        bar.set_postfix(loss=round(1.0 / (epoch * 50 + i + 1), 5))
"""


def test_tqdm_write_between_states_does_not_start_a_new_bar(home: Path, tmp_path: Path) -> None:
    run_id = run_script(home, tmp_path, TQDM_WRITE_SCRIPT)
    steps = of_type(home, run_id, "step")
    assert 4 <= len(steps) <= 100 and max(e["step"] for e in steps) == 100
    assert_last_states(steps, (home / "runs" / run_id / "stdout.log").read_text(), 50)


def test_nested_bars_count_the_inner_one_across_epochs_and_the_outer_one_gives_the_epoch(
        home: Path, tmp_path: Path) -> None:
    run_id = run_script(home, tmp_path, NESTED_BARS_SCRIPT)
    steps = of_type(home, run_id, "step")
    numbers = [e["step"] for e in steps]
    # The last state drawn of the third inner bar is its last step: 49/50 or earlier (a bar with
    # leave=False is cleared, not redrawn, when it closes; on a busy machine tqdm draws fewer states).
    drawn = re.findall(r"batches:[^\r\n]*?(\d+)/50 \[", (home / "runs" / run_id / "stderr.log").read_text())
    assert numbers == sorted(set(numbers)) and max(numbers) == 100 + int(drawn[-1]), (numbers, drawn[-3:])
    for event in steps:  # the loss the bar shows, in the epoch it belongs to (set in an iteration of it)
        epoch = round(1.0 / event["loss"] - 1) // 50 + 1  # the loss set in iteration i is 1 / (i + 1)
        assert event["epoch"] == epoch, event


def test_progress_counters_on_lines_of_their_own_count_once(home: Path, tmp_path: Path) -> None:
    steps = of_type(home, run_script(home, tmp_path, KERAS_LIKE_SCRIPT), "step")
    assert [e["step"] for e in steps] == list(range(1, 101))
    assert [e["loss"] for e in steps] == [1.0 / n for n in range(1, 101)]


def pump_through(tmp_path: Path, *writes: bytes) -> list[dict]:
    """Write each chunk to a pipe read by a real Pump, a pause between them; the step events made."""
    path = tmp_path / "events.jsonl"
    read_fd, write_fd = os.pipe()
    log = os.open(os.devnull, os.O_WRONLY)
    pump = Pump(read_fd, log, OutputEvents(EventWriter(path, "r"), []).stdout)
    pump.start()
    for chunk in writes:
        os.write(write_fd, chunk)
        time.sleep(0.3)  # the pump reads what is there before the rest of the line arrives
    os.close(write_fd)
    pump.join(timeout=10)
    os.close(log)
    os.close(read_fd)
    assert not pump.is_alive()
    events = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [e for e in events if e["type"] == "step"]


def test_a_long_line_keeps_its_first_part_and_each_key_with_its_value(tmp_path: Path) -> None:
    head = b"acc: 0.75 " + b"x" * (MAX_LINE - 17) + b" loss: 0"
    assert head[:MAX_LINE].endswith(b"loss: ")  # the limit falls between the key and its value
    steps = pump_through(tmp_path, head, b".51234\n")
    assert [{k: e[k] for k in ("acc", "loss") if k in e} for e in steps] == [{"acc": 0.75}, {"loss": 0.51234}]


def test_a_long_line_of_numbers_is_never_cut_inside_one(tmp_path: Path) -> None:
    head = b"0.25," * (MAX_LINE // 5) + b"loss=0.5"  # no whitespace anywhere; the limit falls in `loss`
    steps = pump_through(tmp_path, head, b"1234,acc=0.9\n")
    assert [(e["loss"], e["acc"]) for e in steps] == [(0.51234, 0.9)]
