"""Out-of-memory recovery on the model families users train, with the fault raised where real ones strike:
inside the model's forward (a hook on its middle layer) or inside backward (a hook on that layer's
gradient), on rank 0 or rank 1, on the first step or a later one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from trainer_runs import events, make_config, make_run, train

from trainconsole.protocol import run_status

HERE = str(Path(__file__).parent)
DIGITS16 = {"image_size": 16, "channels": 3}


def fault_run(tc_home: Path, monkeypatch: pytest.MonkeyPatch, fault: str, model: str, **sections: dict):
    """A run of `model_families:<model>` with `TRAINCONSOLE_OOM_AT=fault` ('' = none); its events."""
    monkeypatch.setenv("TRAINCONSOLE_OOM_AT", fault)
    train_spec = {"epochs": 1, "max_steps": 4, "batch_size": 32, "threads": 1, **sections.pop("train", {})}
    config = make_config(model={"name": f"model_families:{model}"}, data=DIGITS16, train=train_spec,
                         **sections)
    run = make_run(tc_home, config, name=model)
    code = train(run, timeout=300, pythonpath=HERE)
    assert code == 0 and run_status(run) == "finished", (fault, model, run.stderr.read_text()[-2000:])
    return run


def final_state(run) -> dict[str, torch.Tensor]:
    return torch.load(run.last_ckpt, weights_only=True)["model"]


@pytest.mark.slow
def test_resnet18_ddp_out_of_memory_inside_rank_0s_first_forward(tc_home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The hang of issue 15: DDP's buffer broadcast no longer pairs after a mid-forward OOM on one rank."""
    ddp = {"name": "ddp", "devices": 2, "accelerator": "cpu"}
    for fault in ("0:1:forward", "1:2:backward"):
        run = fault_run(tc_home, monkeypatch, fault, "resnet18", strategy=ddp)
        (oom,) = events(run, "oom_recovered")
        rank, step, phase = fault.split(":")
        assert oom["failed_ranks"] == [int(rank)] and oom["step"] == int(step)
        assert oom["batch_size"] == 32 and oom["micro_batch"] == 8 and oom["accumulate"] == 2
        assert events(run, "eval") and events(run, "finished")[0]["steps"] == 4


@pytest.mark.slow
def test_single_batch_65_splits_near_equal_and_batchnorm_trains(tc_home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """batch 65 halved used to leave a 1-sample micro-batch (32 + 32 + 1): BatchNorm cannot train on it."""
    run = fault_run(tc_home, monkeypatch, "0:1:forward", "resnet18", train={"batch_size": 65, "max_steps": 2})
    (oom,) = events(run, "oom_recovered")
    assert oom["micro_batch"] == 32 and oom["step"] == 1 and oom["phase"] == "forward"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["single", "dp", "model_parallel"])
def test_families_recover_to_the_unfaulted_run(tc_home: Path, monkeypatch: pytest.MonkeyPatch,
                                               strategy: str) -> None:
    """Frozen layers: recovery is exact (same weights as the unfaulted run). BatchNorm and dropout: the run
    finishes with the batch kept; the BatchNorm statistics of the failed attempt are put back."""
    spec = {"name": strategy, "accelerator": "cpu"}
    reference = fault_run(tc_home, monkeypatch, "", "frozen", strategy=spec)
    for fault in ("0:1:forward", "0:3:backward"):
        run = fault_run(tc_home, monkeypatch, fault, "frozen", strategy=spec)
        assert len(events(run, "oom_recovered")) == 1
        ours, theirs = final_state(run), final_state(reference)
        assert all(torch.allclose(ours[k], theirs[k], atol=1e-5) for k in theirs), fault
    for model in ("transformer", "resnet18"):
        run = fault_run(tc_home, monkeypatch, "0:2:backward", model, strategy=spec)
        (oom,) = events(run, "oom_recovered")
        assert oom["accumulate"] == 2 and oom["phase"] == "backward"


@pytest.mark.slow
def test_ddp_recovery_is_exact_and_averages_gradients_as_ddp_does(tc_home: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Frozen layers (no BatchNorm, no dropout) under ddp with train.oom = "recover" (our gradient
    buckets): the same weights as with train.oom = "fail" (DDP's own reducer), with no fault and after an
    out-of-memory error on either rank, in forward or backward."""
    ddp = {"name": "ddp", "devices": 2, "accelerator": "cpu"}
    plain = fault_run(tc_home, monkeypatch, "", "frozen", strategy=ddp, train={"oom": "fail"})
    reference = final_state(plain)
    for fault in ("", "0:1:backward", "1:3:forward"):
        run = fault_run(tc_home, monkeypatch, fault, "frozen", strategy=ddp)
        assert len(events(run, "oom_recovered")) == (1 if fault else 0)
        ours = final_state(run)
        assert all(torch.allclose(ours[k], reference[k], atol=1e-5) for k in reference), fault
