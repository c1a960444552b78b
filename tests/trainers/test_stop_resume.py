"""SIGTERM stops a run gracefully (checkpoint, `stopped`, exit 0); --resume continues its step counter."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from processes import wait_for
from trainer_runs import events, make_config, make_run, start, train

from trainconsole import protocol
from trainconsole.protocol import dumps
from trainconsole.trainers import checkpoint


@pytest.mark.slow
def test_sigterm_stops_and_resume_continues(tc_home: Path) -> None:
    config = make_config(train={"epochs": 500, "batch_size": 16})
    run = make_run(tc_home, config)
    proc = start(run)
    wait_for(lambda: any(e["step"] >= 150 for e in events(run, "step")), what="150 steps")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, run.stderr.read_text()

    stopped = events(run, "stopped")
    assert len(stopped) == 1 and events(run)[-1]["type"] == "stopped"
    saved = [e for e in events(run, "checkpoint") if e["path"].endswith("last.pt")][-1]
    assert saved["step"] == stopped[0]["step"] and saved["t"] <= stopped[0]["t"]
    assert protocol.run_status(run) == "stopped" and run.read_info()["exit_code"] == 0
    state = checkpoint.load(run.last_ckpt)
    stop_step, stop_epoch = stopped[0]["step"], stopped[0]["epoch"]
    assert state["step"] == stop_step and state["epoch"] == stop_epoch
    assert 1 <= stop_epoch < 500

    config["train"]["epochs"] = stop_epoch + 2  # finish soon after resuming
    run.config.write_text(dumps(config))
    before = len(events(run))
    assert train(run, "--resume") == 0, run.stderr.read_text()

    after = events(run)[before:]
    assert after[0]["type"] == "started" and after[0]["resumed_from_step"] == stop_step
    first_step = next(e for e in after if e["type"] == "step")
    assert first_step["step"] > stop_step and first_step["epoch"] >= stop_epoch
    assert state["epoch_complete"] or first_step["epoch"] == stop_epoch  # a cut epoch is finished first
    assert after[-1]["type"] == "finished" and after[-1]["epochs"] == stop_epoch + 2
    per_epoch = events(run, "started")[0]["steps_per_epoch"]
    assert after[-1]["steps"] == (stop_epoch + 2) * per_epoch  # no batch trained twice, none skipped
    assert protocol.run_status(run) == "finished"


def test_resume_without_checkpoint_starts_fresh_with_warning(tc_home: Path) -> None:
    run = make_run(tc_home, make_config(data={"name": "synthetic", "samples": 64, "shape": [1, 8, 8]},
                                        train={"epochs": 1, "batch_size": 16}))
    assert train(run, "--resume") == 0, run.stderr.read_text()
    warning = events(run, "warning")
    assert warning and warning[0]["code"] == "no_checkpoint"
    assert events(run, "started")[0]["resumed_from_step"] is None and events(run, "finished")
