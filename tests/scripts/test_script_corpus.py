"""A corpus of genuine public training scripts' printing, read right: each fixture of ours prints what the
original prints (corpus_cases.py names it), runs as a real `trainconsole run --script`, and its events
must be the ones written by hand: every printed step once, at the step printed, with the values printed
there; no after-training test result as validation; no timing as a metric.

The fixtures print without training (no torch), so the whole corpus runs at once, in parallel: one run
each, a few seconds in all. The tqdm script checks each count's last drawn state against its own output.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from corpus_cases import CASES, Event, ordered
from processes import wait_for
from script_helpers import EXE, FIXTURES, assert_last_states

CORPUS = FIXTURES / "corpus"
KINDS = ("step", "eval", "result", "summary")
#: Fields that are not metrics: where the event is, what the runner adds, timing (checked apart).
NOT_METRICS = ("v", "t", "run", "type", "step", "epoch", "epochs", "rank", "mem", "timing")
ENDS = ("finished", "failed", "stopped", "killed")


def launch(home: Path, script: str, args: tuple[str, ...] = ()) -> Path:
    """Start `trainconsole run --script` (not waiting); the run's directory."""
    env = {**os.environ, "TRAINCONSOLE_HOME": str(home)}
    out = subprocess.run([EXE, "run", "--script", str(CORPUS / script), "--", *args], capture_output=True,
                         text=True, env=env, timeout=120, check=True)
    return home / "runs" / out.stdout.split()[0]


def events(run: Path) -> list[dict[str, Any]]:
    """The run's events once it has ended."""
    import json

    path = run / "events.jsonl"
    wait_for(lambda: path.exists() and any(f'"type":"{k}"' in path.read_text() for k in ENDS),
             timeout=120, what=f"{run.name} to end")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Every corpus script run at once; each one's events, by name (the tqdm script's as `tqdm`)."""
    home = tmp_path_factory.mktemp("corpus") / "home"
    runs = {name: launch(home, case.script, case.args) for name, case in CASES.items()}
    runs["tqdm"] = launch(home, "tqdm_postfix.py")
    return {name: events(run) for name, run in runs.items()} | {"tqdm_dir": runs["tqdm"]}  # type: ignore[dict-item]


def shown(event: dict[str, Any]) -> Event:
    """An event as the cases write it: kind, step, epoch and its metrics."""
    metrics = {k: v for k, v in event.items() if k not in NOT_METRICS}
    return event["type"], event["step"], event.get("epoch"), metrics


@pytest.mark.parametrize("name", CASES)
def test_each_printed_step_once_with_its_values(corpus: dict[str, list[dict[str, Any]]], name: str) -> None:
    case, got = CASES[name], corpus[name]
    assert [e for e in got if e["type"] in ENDS][0]["type"] == "finished", got[-1]
    assert ordered([shown(e) for e in got if e["type"] in KINDS]) == ordered(case.events), case.original
    timing = {k for e in got if e["type"] in KINDS for k in e.get("timing", {})}
    assert timing == case.timing  # times and rates kept as timing, never as a metric or a loss


def test_a_tqdm_set_postfix_bar_carries_each_counts_last_state(corpus: dict[str, Any]) -> None:
    got, run = corpus["tqdm"], corpus["tqdm_dir"]
    steps = [e for e in got if e["type"] == "step"]
    assert_last_states(steps, (run / "stderr.log").read_text(), 20, key="acc")
    assert_last_states(steps, (run / "stderr.log").read_text(), 20)
    assert max(e["step"] for e in steps) == 40 and {e["epoch"] for e in steps} == {1, 2}
    assert all(e["epochs"] == 2 for e in steps)  # `Epoch 1/2` in the bar's description
    # `Epoch 1/2 - Loss: 0.1799, Accuracy: 65.00%`: the epoch's summary, no step of its own; it is read
    # from stdout while the bar is drawn on stderr, so only its epoch (not the moment) is certain
    summaries = [(e["epoch"], e["loss"], e["acc"]) for e in got if e["type"] == "summary"]
    assert summaries == [(1, 0.1799, 0.65), (2, 0.034, 0.65)]
    assert all(e["step"] <= 20 * e["epoch"] for e in got if e["type"] == "summary")


def test_the_console_shows_what_each_script_logs(corpus: dict[str, Any]) -> None:
    """The runs table and plot over genuine scripts' events: dcgan has no `loss`, so its first loss-like
    metric is its loss (not `-`, not "no data yet") and m plots each other metric in turn; the tqdm
    script's epoch total is its own (`Epoch 1/2`), not a config's `train.epochs`."""
    from trainconsole.console.core.board import next_metric, plot_lines, plotted, row
    from trainconsole.console.core.run_state import RunState

    dcgan = RunState("dcgan")
    for event in corpus["dcgan"]:
        dcgan.apply(event)
    steps = [e for e in corpus["dcgan"] if e["type"] == "step"]
    assert dcgan.loss_key == "loss_d" and dcgan.loss == steps[-1]["loss_d"]
    assert row(dcgan, now=steps[-1]["t"])[4] == f"{steps[-1]['loss_d']:.4g}"
    (line,) = [ln for ln in plot_lines([dcgan], 100) if ln.kind == "train"]
    assert line.ys == [e["loss_d"] for e in steps]
    seen = [plotted(dcgan)]
    for _ in range(len(dcgan.metrics) + 1):
        dcgan.plotted = next_metric(dcgan)
        seen.append(plotted(dcgan))
    assert seen[0] == seen[-1] == "loss_d" and sorted(seen[1:-1]) == ["d_g_z", "d_g_z_2", "d_x", "loss_g"]
    dcgan.plotted = "d_x"
    assert [ln.ys for ln in plot_lines([dcgan], 100)] == [[e["d_x"] for e in steps]]

    bar = RunState("tqdm")
    bar.set_info({"kind": "script"}, None)
    for event in corpus["tqdm"]:
        bar.apply(event)
    assert row(bar, now=bar.t_last)[3] == "2/2"
