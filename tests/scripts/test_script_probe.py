"""The probe inside a script run's processes (real torch, real `trainconsole run --script`): the step,
epoch, lr, loss and phase it measures are the script's own (its counters, written by the script itself);
nothing the script computes or prints changes; a script without torch runs exactly as before; the
environment's own sitecustomize still runs; NaN, leaks and failures are told at their step."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from script_helpers import EXE, FIXTURES, of_type

PROBE = FIXTURES / "probe"
TRAIN = PROBE / "probe_train.py"
ENDS = ("finished", "failed", "stopped", "killed")

pytestmark = pytest.mark.slow


def run(home: Path, cwd: Path, script: Path, *args: str, flags: tuple[str, ...] = (),
        env: dict[str, str] | None = None) -> str:
    """`trainconsole run --script SCRIPT FLAGS -- ARGS`, waited for; the run's id."""
    out = subprocess.run([EXE, "run", "--script", str(script), *flags, "--wait", "--", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    run_id = out.stdout.split()[0]
    wait_for(lambda: any(e["type"] in ENDS for e in events(home, run_id)), timeout=30, what="the end")
    return run_id


def events(home: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's events."""
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def counters(path: Path) -> dict[str, Any]:
    """What the script counted itself."""
    return json.loads(path.read_text())


def test_step_epoch_lr_loss_and_phase_are_the_scripts_own(home: Path, tmp_path: Path) -> None:
    run_id = run(home, tmp_path, TRAIN, "--generate", "3", "--counters", "c.json")
    own, got = counters(tmp_path / "c.json"), events(home, run_id)
    epoch_of = dict(zip(own["steps"], own["epochs"], strict=True))
    loss_of = dict(zip(own["steps"], own["losses"], strict=True))
    lr_of = dict(zip(own["steps"], own["lrs"], strict=True))
    probe = [e for e in got if e["type"] == "step" and e["source"] == "probe"]
    assert probe[-1]["step"] == own["steps"][-1] == got[-1]["step"]  # the `finished` event's too
    for e in probe:
        assert (e["epoch"], e["lr"]) == (epoch_of[e["step"]], lr_of[e["step"]])
    first = [loss_of[s] for s in range(1, probe[0]["step"] + 1)]  # the mean of the steps up to the first
    assert probe[0]["loss"] == pytest.approx(sum(first) / len(first))
    text = [e for e in got if e["type"] == "step" and e["source"] == "text"]
    # `it 4 ep 1 loss=...`: a position no reader knows, every 2nd step, each at its own step
    assert [e["step"] for e in text] == [s for s in own["steps"] if s % 2 == 0]
    assert all(e["epoch"] == epoch_of[e["step"]] and e["loss"] == round(loss_of[e["step"]], 4) for e in text)
    evals = [e for e in got if e["type"] == "eval"]
    # after each epoch: `Train set: loss` stays the train split's; `train X valid Y` is found; the last
    # epoch's, printed after the last step, repeats the evaluations before it: an evaluation, no result
    assert [e["step"] for e in evals] == [s for s in own["evals"] for _ in (0, 1)]
    assert all("train_loss" in e for e in evals) and sum("val_loss" in e for e in evals) == 3
    assert not of_type(home, run_id, "result")
    assert not [e for e in got if e["type"] == "step" and "lr" in e and e["source"] == "text"]  # no config


def test_a_full_batch_script_has_one_step_an_epoch(home: Path, tmp_path: Path) -> None:
    run_id = run(home, tmp_path, TRAIN, "--full-batch", "--epochs", "40", "--print-every", "10",
                 "--counters", "c.json")
    own, got = counters(tmp_path / "c.json"), events(home, run_id)
    assert own["batches"] == 1 and own["steps"][-1] == 40
    assert [e["step"] for e in got if e["type"] == "step" and e["source"] == "text"] == [10, 20, 30, 40]
    assert got[-1]["step"] == 40
    assert {e["epoch"] for e in got if e["type"] == "step"} <= set(range(1, 41))


def weights_and_stdout(home: Path, tmp_path: Path, script: Path, args: tuple[str, ...],
                       flags: tuple[str, ...]) -> tuple[list[bytes], str, str]:
    """The weights a run saved, its stdout, and its id (each run in its own folder)."""
    cwd = tmp_path / ("off" if "--no-measure" in flags else "on")
    cwd.mkdir()
    run_id = run(home, cwd, script, *args, "--save", "w.pt", flags=flags)
    saved = sorted(cwd.glob("w.pt*"))
    assert saved, events(home, run_id)[-1]
    return [p.read_bytes() for p in saved], (home / "runs" / run_id / "stdout.log").read_text(), run_id


@pytest.mark.parametrize(("args", "flags"), [
    (("--workers", "2"), ()),  # DataLoader worker processes
    ((), ("--nproc", "2")),  # torchrun, 2 ranks (DDP, gloo)
    (("--spawn", "2"), ()),  # mp.spawn workers, each training
], ids=["single", "torchrun", "spawn"])
def test_nothing_the_script_computes_or_prints_changes(home: Path, tmp_path: Path, args: tuple[str, ...],
                                                       flags: tuple[str, ...]) -> None:
    on = weights_and_stdout(home, tmp_path, TRAIN, args, flags)
    off = weights_and_stdout(home, tmp_path, TRAIN, args, (*flags, "--no-measure"))
    assert on[0] == off[0] and on[1] == off[1] and on[1].count("\n") > 10  # bit-identical, same lines
    assert [e for e in events(home, on[2]) if e.get("source") == "probe"]
    assert not [e for e in events(home, off[2]) if "source" in e]  # off: today's reading


def test_a_script_without_torch_runs_exactly_as_before(home: Path, tmp_path: Path) -> None:
    outs = []
    for flags in ((), ("--no-measure",)):
        run_id = run(home, tmp_path, PROBE / "no_torch.py", flags=flags)
        outs.append((home / "runs" / run_id / "stdout.log").read_text())
    assert outs[0] == outs[1] and "torch: False" in outs[0]


def test_the_environments_own_sitecustomize_still_runs(home: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['THEIRS'] = 'ran'\n")
    run_id = run(home, tmp_path, PROBE / "no_torch.py", "--torch", env={"PYTHONPATH": str(site)})
    out = (home / "runs" / run_id / "stdout.log").read_text()
    assert "sitecustomize: ran" in out and "torch: True" in out
    assert [e for e in of_type(home, run_id, "step") if e.get("source") == "probe"]


def test_a_nan_between_two_prints_is_warned_at_its_step(home: Path, tmp_path: Path) -> None:
    # step 9's batch turns NaN; the script prints every 5th step only, and its printed loss never says
    run_id = run(home, tmp_path, TRAIN, "--nan-at", "9", "--print-every", "5", "--counters", "c.json")
    own = counters(tmp_path / "c.json")
    bad = [s for s, loss in zip(own["steps"], own["losses"], strict=True) if loss != loss]
    warnings = [e for e in of_type(home, run_id, "warning") if e["code"] == "nonfinite_loss"]
    assert bad[0] == 9 and [w["step"] for w in warnings] == [9]
    assert "learning rate" in warnings[0]["hint"]


def test_a_loss_summed_as_a_tensor_is_warned_of_a_leak(home: Path, tmp_path: Path) -> None:
    # 100 steps of at least 20 ms: the probe records at most every 0.1 s, so the watch gets its 8 points after
    # the warm-up however fast this machine (50 steps of 5 ms gave a quiet machine too few: no warning)
    run_id = run(home, tmp_path, TRAIN, "--leak", "--width", "4096", "--batch-size", "256", "--samples",
                 "25600", "--epochs", "1", "--sleep", "0.02", "--print-every", "100", "--lr", "0.001")
    leaks = [e for e in of_type(home, run_id, "warning") if e["code"] == "memory_leak"]
    assert leaks and leaks[0]["step"] <= 400, leaks
    assert "loss.item()" in leaks[0]["hint"]


def test_a_failure_says_the_step_and_memory_of_that_moment(home: Path, tmp_path: Path) -> None:
    run_id = run(home, tmp_path, TRAIN, "--fail-at", "9")
    failed = of_type(home, run_id, "failed")[0]
    assert failed["step"] == 9 and failed["mem"]["rss"] > 0 and failed["at"].startswith("at step 9:")
    assert "a bad batch after step 9" in failed["cause"]


def test_no_measure_reads_the_output_as_before(home: Path, tmp_path: Path) -> None:
    run_id = run(home, tmp_path, TRAIN, flags=("--no-measure",))
    assert not (home / "runs" / run_id / "probe").exists()
    assert not [e for e in events(home, run_id) if "source" in e]


def test_a_line_torn_by_another_process_is_read_as_the_two_lines_it_holds(home: Path, tmp_path: Path) -> None:
    # worker 1's whole line lands inside worker 0's: `A-text` `B-text\n` `\n` on one pipe; and (every
    # other step) worker 1's text alone, ended after worker 0's newline: `A-text` `B-text` `\n` (read
    # before B's stamp came) `\n` (the flaky failures of the hogwild corpus case under load: the torn line
    # was read as one, with the other process's figures, or lost its first half)
    run_id = run(home, tmp_path, PROBE / "torn_lines.py", env={"COUNTERS": str(tmp_path / "c")})
    workers = [json.loads(p.read_text()) for p in tmp_path.glob("c.*")]
    got = [(e["step"], e["loss"]) for e in events(home, run_id) if e.get("source") == "text"]
    assert len(workers) == 2 and got
    first = next(w for w in workers if w["rank"] == 0)  # it stepped first: the run's main process
    assert got == [(p["step"], p["loss"]) for p in first["printed"]]  # each of its lines, whole
