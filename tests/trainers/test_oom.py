"""Out of memory inside a run: a real CPU memory cap, recovery that keeps the batch, DDP agreement."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from trainer_runs import events, make_config, make_run, train

from trainconsole.console.core.board import plot_lines
from trainconsole.console.core.run_state import RunState
from trainconsole.protocol import run_status

# 32x32 digits, batch 256: the full batch needs more than 100 MB of activations, half of it does not.
CAPPED = {"data": {"image_size": 32}, "train": {"batch_size": 256, "epochs": 1, "threads": 1}}
HOG = textwrap.dedent('''
    import torch
    from torch import nn

    class Hog(nn.Module):
        """Allocates 64 MB per sample in forward: no micro-batch fits under a small cap."""

        def __init__(self, num_classes):
            super().__init__()
            self.head = nn.Linear(64, num_classes)

        def forward(self, x):
            waste = torch.ones(x.shape[0], 16 << 20)
            return self.head(x.flatten(1)) + waste[:, :1] * 0

    def hog(config, num_classes, input_shape):
        return Hog(num_classes)
''')


#: The product's own hang detector, shortened: a rank that waits this long at a collective (the ranks'
#: `TRAINCONSOLE_DIST_TIMEOUT_S`, with no full-disk pause added) fails the run, naming the collective. Far
#: above any wait between two ranks of these small runs, even on a busy machine.
HANG_S = 120
#: A last resort for a hang outside any collective: a run here takes ~35 s (mostly starting three Python
#: processes that import torch) on a quiet machine, and a few times that on a busy one.
WALL_S = 600


def run_config(tc_home: Path, config: dict, *args: str, **kwargs: object) -> tuple[int, object]:
    run = make_run(tc_home, config)
    return train(run, *args, timeout=WALL_S, **kwargs), run


def unfinished(code: int, run: object) -> str:
    """Why the run did not finish ('' if it did): a hang shows as a rank's collective timing out."""
    if code == 0 and run_status(run) == "finished":
        return ""
    failed = events(run, "failed")
    cause = failed[-1]["cause"] if failed else run.stderr.read_text()[-2000:]
    return f"exit {code}, {run_status(run)}: {cause}"


def same_training(run: object, reference: object) -> bool:
    """Both runs ended with the same weights and validation loss (within float tolerance). Step events
    are rate-limited by time, so their count and windows differ between runs: compare what they add up to."""
    ours, theirs = (torch.load(r.last_ckpt, weights_only=True)["model"] for r in (run, reference))
    weights = all(torch.allclose(ours[k], theirs[k], atol=1e-4) for k in theirs)
    val = [e["val_loss"] for e in events(run, "eval")], [e["val_loss"] for e in events(reference, "eval")]
    return weights and val[0] == pytest.approx(val[1], abs=1e-4)


def capped_config(cap: int, **strategy: object) -> dict:
    return make_config(data=CAPPED["data"], train={**CAPPED["train"], "max_memory_mb": cap},
                       strategy=strategy)


@pytest.mark.slow
def test_capped_run_recovers_keeps_the_batch_and_matches_uncapped(tc_home: Path) -> None:
    code, free_run = run_config(tc_home, capped_config(0))
    assert code == 0 and not events(free_run, "oom_recovered")
    code, capped = run_config(tc_home, capped_config(100))
    assert code == 0 and run_status(capped) == "finished", capped.stderr.read_text()
    started = events(capped, "started")[0]
    assert started["memory_cap"]["limit_mb"] == 100 and started["memory_cap"]["device"] == "cpu"
    oom = events(capped, "oom_recovered")
    assert oom and oom[0]["step"] == 1 and oom[0]["device"] == "cpu"
    assert oom[0]["phase"] in ("forward", "backward")
    last = oom[-1]
    assert last["batch_size"] == 256 and last["micro_batch"] < 256
    assert last["micro_batch"] * last["accumulate"] >= 256 > last["micro_batch"] * (last["accumulate"] - 1)
    assert "can't allocate memory" in oom[0]["cause"] and oom[0]["memory"]["data_mb"] > 0
    assert same_training(capped, free_run)
    console = RunState(capped.id)  # the console marks each recovery on the plot, at its step
    for event in events(capped):
        console.apply(event)
    marks = [line.xs for line in plot_lines([console], 50) if line.kind == "oom"]
    assert marks == [[e["step"] for e in oom]]
    state = torch.load(capped.last_ckpt, weights_only=True)
    assert state["micro_batch"] == last["micro_batch"] and state["step"] == 6
    # resume starts at the recorded micro-batch: no second out-of-memory
    assert train(capped, "--resume", timeout=WALL_S) == 0
    assert events(capped, "started")[-1]["micro_batch"] == last["micro_batch"]
    assert len(events(capped, "oom_recovered")) == len(oom)


@pytest.mark.slow
@pytest.mark.timeout(3 * WALL_S)  # three runs: ~110 s quiet; a hang fails a run after HANG_S
def test_ddp_ranks_agree_on_the_micro_batch_and_never_hang(tc_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_DIST_TIMEOUT_S", str(HANG_S))
    ddp = {"name": "ddp", "devices": 2, "accelerator": "cpu"}  # 2 gloo workers, on a GPU box too

    def ddp_run(cap: int) -> tuple[int, object]:
        config = capped_config(cap, **ddp)
        config["train"]["disk_full_wait_s"] = 0.0  # nothing is added to HANG_S at a collective
        return run_config(tc_home, config)

    code, free_run = ddp_run(0)
    assert not (why := unfinished(code, free_run)), why
    code, capped = ddp_run(60)
    assert not (why := unfinished(code, capped)), why
    oom = events(capped, "oom_recovered")
    assert oom and oom[-1]["batch_size"] == 256 and oom[-1]["micro_batch"] < 128  # 128 per rank
    assert same_training(capped, free_run)
    # only rank 1 fails, in backward: rank 0 must not wait in an all-reduce for ever
    monkeypatch.setenv("TRAINCONSOLE_OOM_AT", "1:3:backward")
    code, one_rank = ddp_run(0)
    assert not (why := unfinished(code, one_rank)), why
    (oom,) = events(one_rank, "oom_recovered")
    assert oom["failed_ranks"] == [1] and oom["step"] == 3 and oom["micro_batch"] == 64
    assert oom["phase"] == "other rank" and oom["accumulate"] == 2
    assert same_training(one_rank, free_run)


def hog_run(tc_home: Path, tmp_path: Path, oom: str) -> tuple[int, dict]:
    (tmp_path / "tc_hog.py").write_text(HOG)
    config = make_config(model={"name": "tc_hog:hog"},
                         train={"batch_size": 8, "max_steps": 2, "max_memory_mb": 32, "oom": oom})
    code, run = run_config(tc_home, config, pythonpath=str(tmp_path))
    (failed,) = events(run, "failed")
    return code, failed, run


def test_out_of_memory_at_micro_batch_one_fails_with_a_clear_cause(tc_home: Path, tmp_path: Path) -> None:
    code, failed, run = hog_run(tc_home, tmp_path, "recover")
    assert code == 1 and failed["cause"].startswith("OutOfMemory: out of memory at a micro-batch of 1 on cpu")
    assert "raise train.max_memory_mb (now 32)" in failed["hint"]
    assert [e["micro_batch"] for e in events(run, "oom_recovered")] == [4, 2, 1]


def test_oom_fail_mode_fails_at_once(tc_home: Path, tmp_path: Path) -> None:
    code, failed, run = hog_run(tc_home, tmp_path, "fail")
    assert code == 1 and "can't allocate memory" in failed["cause"] and not events(run, "oom_recovered")
    assert "train.oom = 'recover'" in failed["hint"]


def test_memory_history_on_cpu_is_accepted_and_reported_unavailable(tc_home: Path) -> None:
    config = make_config(train={"epochs": 1, "max_steps": 2, "memory_history": True})
    code, run = run_config(tc_home, config)
    assert code == 0 and run_status(run) == "finished"
    (warning,) = [e for e in events(run, "warning") if e["code"] == "memory_history_unavailable"]
    assert "not available on cpu" in warning["message"]
    assert not list(run.path.glob("memory_snapshot*"))


def test_search_doubles_then_bisects() -> None:
    from trainconsole.trainers.builtin.batch_finder import search

    tried: list[int] = []

    def fits(batch: int) -> bool:
        tried.append(batch)
        return batch <= 100

    assert search(fits, 1000) == 100 and tried[:8] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert search(lambda b: True, 300) == 300 and search(lambda b: False, 300) == 0


@pytest.mark.slow
def test_auto_batch_size_finds_what_fits_under_the_cap(tc_home: Path) -> None:
    config = capped_config(100)
    config["train"].update(batch_size="auto", max_steps=3)
    code, run = run_config(tc_home, config)
    assert code == 0 and run_status(run) == "finished", run.stderr.read_text()
    started = events(run, "started")[0]
    finder = started["batch_finder"]
    fitted = [b for b, ok in finder["trials"] if ok]
    failed = [b for b, ok in finder["trials"] if not ok]
    assert failed and max(fitted) < min(failed)  # it ran into the cap and stayed under it
    assert started["batch_size"] == finder["per_process"] == int(max(fitted) * 0.9)
    assert not events(run, "oom_recovered")  # the margin holds in the run itself
    # resumed, the run takes the batch its checkpoint was trained with: no second search
    run.config.write_text(run.config.read_text().replace("max_steps = 3", "max_steps = 5"))
    assert train(run, "--resume", timeout=240) == 0
    again = events(run, "started")[-1]
    assert again["batch_size"] == started["batch_size"] and again["batch_finder"]["trials"] == []
    assert again["batch_finder"]["from_checkpoint"].endswith("last.pt")
    assert events(run, "step")[-1]["step"] == 5
