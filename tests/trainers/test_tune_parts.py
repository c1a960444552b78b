"""The tune driver's parts that need no running Ray: how a trial's end is named, its metrics, the stop of
one trial, the events after a stopped search, and where Ray's temp dir goes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from trainconsole.protocol import EventWriter, RunDir, read_all, request_trial_stop
from trainconsole.trainers.tune import bridge, session

TUNE = {"max_t": 4, "scheduler": "asha", "space": {"train.lr": {"uniform": [0.01, 0.1]},
                                                  "train.batch_size": {"choice": [32, 64]}}}


def trial(trial_id: str = "a_00000", iteration: int = 4, config: dict[str, Any] | None = None,
          best: float | None = None) -> SimpleNamespace:
    analysis = {"val_acc": {"max": best}} if best is not None else {}
    return SimpleNamespace(trial_id=trial_id, config=config or {"train.lr": 0.05, "train.batch_size": 64.0},
                           last_result={"training_iteration": iteration}, metric_analysis=analysis,
                           status="TERMINATED")


def test_a_trial_cut_before_max_t_is_stopped_early_one_the_console_stopped_is_stopped(tmp_path: Path) -> None:
    events = bridge.TrialEvents(tmp_path, "run", TUNE)
    assert events.ended_status(trial(iteration=4)) == "terminated"
    assert events.ended_status(trial(iteration=2)) == "stopped_early"
    request_trial_stop(RunDir(tmp_path), "a_00000")
    assert events.ended_status(trial(iteration=2)) == "stopped"
    assert bridge.TrialStopper(tmp_path)("a_00000", {}) is True
    assert bridge.TrialStopper(tmp_path)("a_00001", {}) is False
    without_asha = bridge.TrialEvents(tmp_path, "run", {**TUNE, "scheduler": "none"})
    assert without_asha.ended_status(trial("b_00000", iteration=2)) == "terminated"


def test_trial_events_carry_short_names_plain_values_and_the_best_accuracy_so_far(tmp_path: Path) -> None:
    events = bridge.TrialEvents(tmp_path, "run", TUNE)
    first, second = trial("a_00000", best=0.9), trial("a_00001")
    result = {"training_iteration": 3, "val_acc": 0.8, "val_loss": 0.5, "train_loss": 0.4, "train_s": 1.25,
              "mem": {"rss": 123}}
    events.on_trial_result(0, [first, second], first, result)
    (event,) = read_all(tmp_path / "events.jsonl")
    assert event["type"] == "trial" and event["trial_id"] == "a_00000" and event["number"] == 1
    assert event["config"] == {"lr": 0.05, "batch_size": 64}  # 64.0 sampled for an int key reads 64
    assert event["status"] == "running" and event["iteration"] == 3 and event["time_s"] == 1.25
    assert event["metrics"] == {"val_acc": 0.8, "val_loss": 0.5, "train_loss": 0.4, "best_val_acc": 0.9}
    assert event["mem"] == {"rss": 123}


def test_after_a_stopped_search_unfinished_trials_read_stopped(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path / "events.jsonl", "run")
    for trial_id, status in (("a", "running"), ("b", "terminated"), ("c", "pending"), ("a", "running")):
        writer.emit("trial", trial_id=trial_id, status=status, iteration=1)
    bridge.mark_unfinished_stopped(writer)
    added = read_all(tmp_path / "events.jsonl")[4:]
    assert sorted((e["trial_id"], e["status"]) for e in added) == [("a", "stopped"), ("c", "stopped")]


def test_ray_temp_dir_is_in_the_run_or_a_short_link_to_it(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 80) / "run"
    deep.mkdir(parents=True)
    link = session.temp_dir(deep)
    assert link.is_symlink() and link.resolve() == (deep / "ray").resolve()
    assert len(str(link)) <= session.MAX_TEMP_DIR
    assert session.temp_dir(deep) == link  # made again on resume, same name
    link.unlink()
    dangling = tmp_path / "tcray-gone"
    dangling.symlink_to(tmp_path / "no-such-run")
    session.sweep_dangling(tmp_path)
    assert not dangling.is_symlink()
    short = Path(tempfile.mkdtemp(prefix="tc", dir="/tmp"))
    try:
        assert session.temp_dir(short) == short.resolve() / "ray"
    finally:
        shutil.rmtree(short)


def test_a_trial_sees_its_stop_request_within_a_second_and_no_other_trials(tmp_path: Path) -> None:
    from trainconsole.trainers.tune.trial import StopRequest

    mine, other = StopRequest(str(tmp_path), "a_00000"), StopRequest(str(tmp_path), "a_00001")
    assert not mine.is_set() and not other.is_set()
    request_trial_stop(RunDir(tmp_path), "a_00000")
    assert not mine.is_set()  # looked less than a second ago: the hot loop does not touch the disk
    mine.next_look = other.next_look = 0.0  # a second later
    assert mine.is_set() and not other.is_set()


def test_an_epoch_that_ends_while_a_stop_is_asked_is_still_a_result(tmp_path: Path) -> None:
    from trainconsole.trainers.tune.trial import TrialFiles, TrialReport

    files = TrialFiles(tmp_path)
    files.last_ckpt.parent.mkdir(parents=True)
    files.last_ckpt.write_bytes(b"ckpt")
    results: list[dict[str, Any]] = []
    report = TrialReport(files, report=lambda metrics, checkpoint: results.append(metrics))
    for epoch in (1, 2):  # as the loop writes an epoch's end; in epoch 2 a stop was asked meanwhile
        report.emit("step", step=10 * epoch, loss=1.0 / epoch)
        report.emit("eval", epoch=epoch, step=10 * epoch, val_loss=0.5 / epoch, val_acc=0.4 * epoch)
        report.emit("checkpoint", path=str(tmp_path / "best.pt"), epoch=epoch, is_best=True)
        report.emit("checkpoint", path=str(files.last_ckpt), epoch=epoch, is_best=False)
    report.emit("step", step=25, loss=0.3)  # a stop in the middle of epoch 3: its last.pt is no result
    report.emit("checkpoint", path=str(files.last_ckpt), epoch=3, is_best=False)
    assert [(r["epoch"], r["val_acc"], r["train_loss"]) for r in results] == [(1, 0.4, 1.0), (2, 0.8, 0.5)]


def test_a_reused_worker_starts_the_next_trial_without_the_last_ones_cap_nor_a_gpu_it_did_not_reserve(
        ) -> None:
    import subprocess
    import sys
    import textwrap

    from trainconsole.protocol import defaults
    from trainconsole.trainers.tune.trial import trial_settings

    child = textwrap.dedent("""
        import resource, torch
        from trainconsole.trainers.troubles import memory_cap
        before = resource.getrlimit(resource.RLIMIT_DATA)
        memory_cap.apply(300, torch.device("cpu"))
        capped = resource.getrlimit(resource.RLIMIT_DATA)
        memory_cap.lift()
        assert capped != before and resource.getrlimit(resource.RLIMIT_DATA) == before, (before, capped)
        big = torch.ones(600 << 18)  # 600 MB: more than the cap allowed
        print("ok", big.numel())
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr
    config = defaults()
    search = {"tune": {"cpus_per_trial": 2, "gpus_per_trial": 0}}
    settled = trial_settings(config, search)
    assert settled["strategy"]["accelerator"] == "cpu" and settled["train"]["threads"] == 2
    assert config["strategy"]["accelerator"] == "auto"  # the search's own config is left as it was
    gpu = trial_settings(config, {"tune": {"cpus_per_trial": 1, "gpus_per_trial": 0.5}})
    assert gpu["strategy"]["accelerator"] == "auto"
