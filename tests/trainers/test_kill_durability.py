"""SIGKILL at random moments never leaves a last.pt / best.pt that fails to load."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest
import torch
from processes import wait_for
from trainer_runs import events, make_config, make_run, start

from trainconsole.trainers import checkpoint
from trainconsole.trainers.builtin import models

KILLS = 15


def tiny_config() -> dict:
    """Tiny synthetic data and epochs of 4 steps: a last.pt (and often a best.pt) every few ms."""
    return make_config(data={"name": "synthetic", "samples": 80, "shape": [1, 8, 8], "classes": 4},
                       train={"epochs": 100_000, "batch_size": 16})


@pytest.mark.slow
def test_sigkill_never_leaves_a_broken_checkpoint(tc_home: Path) -> None:
    config = tiny_config()
    run = make_run(tc_home, config)
    rng = random.Random(1234)
    steps_seen = []
    for i in range(KILLS):
        seen = len(events(run, "checkpoint"))
        proc = start(run, *(["--resume"] if i else []))
        wait_for(lambda p=proc, n=seen: len(events(run, "checkpoint")) > n or p.poll() is not None,
                 what="a checkpoint write")
        time.sleep(rng.uniform(0, 0.25))  # a random moment, with checkpoints written every few ms
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL, run.stderr.read_text()
        for path in (run.last_ckpt, run.best_ckpt):
            if path.exists():
                check_loads(path, config)
        steps_seen.append(checkpoint.load(run.last_ckpt)["step"])
    assert steps_seen == sorted(steps_seen) and steps_seen[-1] > steps_seen[0]  # resumes kept counting
    assert len(events(run, "started")) == KILLS


def check_loads(path: Path, config: dict) -> None:
    """The file loads with weights_only=True and its weights fit a fresh model."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert state["step"] > 0 and state["config"] == config
    model = models.build(config, 4, (1, 8, 8))
    model.load_state_dict(state["model"])
