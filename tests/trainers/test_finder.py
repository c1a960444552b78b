"""`train.batch_size = "auto"` cannot hang and never returns nonsense: a finder killed by the kernel is a
clear failure within seconds, and without a cap on a CPU the batch leaves an epoch several steps."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from trainer_runs import events, make_config, make_run, train

from trainconsole.protocol import run_status


def test_a_killed_finder_fails_the_run_within_a_minute(tc_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_FINDER_KILL", "1")  # the child SIGKILLs itself, as the OOM killer would
    run = make_run(tc_home, make_config(train={"batch_size": "auto", "epochs": 1}))
    began = time.monotonic()
    assert train(run, timeout=60) == 1
    assert time.monotonic() - began < 60
    (failed,) = events(run, "failed")
    assert "killed by signal 9" in failed["cause"] and "train.batch_size to a number" in failed["hint"]


@pytest.mark.slow
def test_auto_on_a_cpu_without_a_cap_keeps_several_steps_per_epoch(tc_home: Path) -> None:
    """The digits demo used to pick 1,438: the whole training set, one step per epoch, chance accuracy."""
    run = make_run(tc_home, make_config(train={"batch_size": "auto", "epochs": 6}))
    assert train(run, timeout=240) == 0 and run_status(run) == "finished"
    started = events(run, "started")[0]
    batch = started["batch_size"]
    assert 1 <= batch <= 1438 // 8 and started["batch_finder"]["trials"]
    assert events(run, "eval")[-1]["val_acc"] > 0.5


def test_the_cap_covers_every_device_a_process_places_work_on() -> None:
    import torch

    from trainconsole.trainers.troubles.memory_cap import placed

    cuda = [torch.device(f"cuda:{i}") for i in (0, 1, 0, 2)]
    assert [str(d) for d in placed(cuda)] == ["cuda:0", "cuda:1", "cuda:2"]  # dp, or model_parallel's stages
    assert [str(d) for d in placed([torch.device("cpu")] * 3)] == ["cpu"]  # CPU stages: one host limit


@pytest.mark.slow
def test_auto_under_model_parallel_searches_with_the_model_placed_in_stages(tc_home: Path) -> None:
    config = make_config(train={"batch_size": "auto", "epochs": 1, "max_memory_mb": 200},
                         strategy={"name": "model_parallel", "devices": 2, "accelerator": "cpu"})
    run = make_run(tc_home, config)
    assert train(run, timeout=240) == 0, run.stderr.read_text()[-2000:]
    started = events(run, "started")[0]
    assert started["batch_finder"]["trials"] and started["memory_cap"]["devices"] == ["cpu"]


@pytest.mark.slow
def test_auto_with_batch_norm_never_tries_a_batch_of_one(tc_home: Path) -> None:
    """resnet18 on 3x8x8 images is down to one value per channel: a batch of one cannot train its batch
    norm ("Expected more than 1 value per channel"); found on an H200 by `make gpu-check`."""
    config = make_config(model={"name": "resnet18"},
                         data={"name": "synthetic", "samples": 128, "shape": [3, 8, 8], "classes": 10},
                         train={"batch_size": "auto", "epochs": 1, "max_steps": 2, "max_memory_mb": 400})
    run = make_run(tc_home, config)
    assert train(run, timeout=240) == 0, run.stderr.read_text()[-2000:]
    started = events(run, "started")[0]
    trials = started["batch_finder"]["trials"]
    assert trials and min(batch for batch, _ in trials) >= 2 and started["batch_size"] >= 2


def test_on_a_gpu_the_found_batch_leaves_a_tenth_of_the_budget_by_the_trials_own_peaks() -> None:
    # resnet18 under 256 MiB on an H100: 112 fitted, 116 did not, 90 % of it (100) ran out in the run
    from trainconsole.trainers.builtin.batch_finder import within

    mib = 1 << 20
    peaks = {64: 150 * mib, 96: 200 * mib, 112: 225 * mib}  # 25/16 MiB a sample
    assert within(peaks, 210 * mib) == 102  # 112 - 15 MiB / (25/16 MiB)
    assert within(peaks, 300 * mib) == 112  # never beyond what was tried
    assert within({96: 200 * mib, 112: 200 * mib}, 100 * mib) == 112  # no slope: the largest that fitted
    assert within({}, mib) == 0
