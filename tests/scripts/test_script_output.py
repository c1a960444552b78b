"""OutputEvents: printed lines into events, with the script tree's memory and the leak watch on it."""

from __future__ import annotations

import json
from pathlib import Path

from trainconsole.protocol import EventWriter
from trainconsole.trainers.scripts.output import LEAK_WARMUP_STEPS, OutputEvents

MB = 1 << 20


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_growing_tree_memory_raises_one_memory_leak_warning(tmp_path: Path) -> None:
    rss = iter(range(500 * MB, 10_000 * MB, 16 * MB))  # the tree's RSS, +16 MB per sample
    out = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [], memory=lambda: {"devices": [],
                       "rss": next(rss)}, mem_interval=0.0)
    for i in range(LEAK_WARMUP_STEPS + 30):
        out.stdout(f"loss: {1 / (i + 1)}")
    events = read(tmp_path / "events.jsonl")
    warnings = [e for e in events if e["type"] == "warning"]
    assert [w["code"] for w in warnings] == ["memory_leak"] and warnings[0]["mb_per_step"] == 16
    steps = [e for e in events if e["type"] == "step"]
    assert len(steps) == LEAK_WARMUP_STEPS + 30 and all(e["mem"]["rss"] >= 500 * MB for e in steps)


def test_flat_tree_memory_raises_no_warning(tmp_path: Path) -> None:
    out = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [],
                       memory=lambda: {"devices": [], "rss": 500 * MB}, mem_interval=0.0)
    for i in range(LEAK_WARMUP_STEPS + 30):
        out.stdout(f"loss: {1 / (i + 1)}")
    assert not [e for e in read(tmp_path / "events.jsonl") if e["type"] == "warning"]


def test_an_evaluation_alone_moves_no_step(tmp_path: Path) -> None:
    """imagenet's `-e`: only `Test: [ i/n]` batch lines and the summary; the batches are not the run's
    steps, the summary is the evaluation (at step 0)."""
    out = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [])
    for i in (1, 5, 9):
        out.stdout(f"Test: [{i:2d}/10]\tTime  0.100 ( 0.100)\tLoss 6.9078e+00 (6.9078e+00)\tAcc@1   {i:.2f} "
                   f"(  {i:.2f})\tAcc@5  10.00 ( 10.00)")
    out.stdout(" *   Acc@1 4.500 Acc@5 10.000")
    out.close()
    events = read(tmp_path / "events.jsonl")
    assert [(e["type"], e["step"], e.get("val_acc@1"), e.get("val_acc@5")) for e in events] == [
        ("eval", 0, 4.5, 10.0)]


def test_an_epoch_summary_read_before_the_bars_last_states_leaves_them_their_count(tmp_path: Path) -> None:
    """The summary is printed on stdout after the bar (stderr) closed, but the two pipes are read apart:
    read first, it must not write the bar's waiting state early (the count's later states would be lost)."""
    out = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [])
    bar = "Epoch 1/1:  {p}%|##| {n}/4 [00:01<00:00, 3.0it/s, acc={acc}, loss={loss}]"
    for n, acc, loss in ((1, 50, 0.5), (2, 60, 0.4), (3, 61, 0.3)):
        out.stderr(bar.format(p=n * 25, n=n, acc=acc, loss=loss), final=False)
    out.stdout("Epoch 1/1 - Loss: 0.3500, Accuracy: 64.00%")  # read before the bar's last states
    out.stderr(bar.format(p=75, n=3, acc=64, loss=0.25), final=False)  # set_postfix at count 3, drawn last
    out.stderr(bar.format(p=100, n=4, acc=64, loss=0.25), final=False)
    out.stderr("", final=True)
    out.close()
    events = read(tmp_path / "events.jsonl")
    assert {e["step"]: e["acc"] for e in events if e["type"] == "step"} == {1: 50, 2: 60, 3: 64, 4: 64}
    assert [(e["type"], e["loss"]) for e in events if e["type"] == "summary"] == [("summary", 0.35)]
