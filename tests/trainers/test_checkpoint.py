"""Checkpoints: weights_only loading refuses pickled code, accepts raw and prefixed state_dicts."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch
from torch import nn

from trainconsole.trainers import checkpoint
from trainconsole.trainers.builtin import models
from trainconsole.trainers.checkpoint import CheckpointError


class Payload:
    """Code that must never run on load."""

    def __reduce__(self) -> tuple:
        return (os.system, ("touch /tmp/trainconsole-pwned",))


class CustomObject:
    """A plain custom class instance: weights_only has no allow-listed global for it."""

    def __init__(self) -> None:
        self.weights = torch.ones(2)


def tiny() -> nn.Sequential:
    return models.small_cnn((1, 8, 8), 3)


def test_pickled_class_instance_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "custom.pt"
    torch.save({"model": CustomObject(), "step": 1}, path)
    with pytest.raises(CheckpointError, match="weights_only") as err:
        checkpoint.load(path)
    assert "only load checkpoints you trust" in str(err.value)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_os_system_reduce_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = Path("/tmp/trainconsole-pwned")
    marker.unlink(missing_ok=True)
    for name, write in (("zip.pt", lambda p: torch.save({"model": Payload()}, p)),
                        ("raw.pkl", lambda p: p.write_bytes(pickle.dumps(Payload())))):
        write(tmp_path / name)
        with pytest.raises(CheckpointError, match="weights_only"):
            checkpoint.load(tmp_path / name)
    assert not marker.exists()


def test_raw_state_dict_with_module_prefixes_loads(tmp_path: Path) -> None:
    source = tiny()
    wrapped = {f"module.{k}": v for k, v in source.state_dict().items()}  # as DataParallel/DDP save it
    torch.save(wrapped, tmp_path / "raw.pt")
    state = checkpoint.load(tmp_path / "raw.pt")
    target = tiny()
    target.load_state_dict(state["model"])
    for a, b in zip(source.state_dict().values(), target.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_save_strips_prefixes_and_round_trips(tmp_path: Path) -> None:
    model = nn.DataParallel(tiny())  # without CUDA it runs the module as it is, but keys get "module."
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.zeros(2, 1, 8, 8)).sum().backward()
    opt.step()
    path = checkpoint.save(tmp_path / "last.pt", model, opt, None, 3, 42, {"train": {"lr": 0.1}},
                           {"val_acc": 0.5}, epoch_complete=True)
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert state["epoch"] == 3 and state["step"] == 42 and state["scaler"] is None
    assert state["metrics"] == {"val_acc": 0.5} and state["config"] == {"train": {"lr": 0.1}}
    assert not any(k.startswith("module.") for k in state["model"])
    tiny().load_state_dict(state["model"])
    assert not list(tmp_path.glob(".*.tmp"))  # the temp file was renamed away


def test_damaged_and_missing_files_give_a_clear_error(tmp_path: Path) -> None:
    good = tmp_path / "good.pt"
    torch.save(tiny().state_dict(), good)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="not a readable PyTorch checkpoint"):
        checkpoint.load(cut)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        checkpoint.load(tmp_path / "missing.pt")


def test_failed_write_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    checkpoint.write_atomic(path, {"step": 1})
    with pytest.raises((pickle.PicklingError, AttributeError)):
        checkpoint.write_atomic(path, {"step": 2, "bad": lambda: None})  # unpicklable: fails mid-write
    assert torch.load(path, weights_only=True) == {"step": 1}
    assert not list(tmp_path.glob(".*.tmp"))
