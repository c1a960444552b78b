"""The loop's parts in-process: precision, schedules, data, batches, models and transfer learning."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_runs import CUDA, make_config

from trainconsole.protocol import RunDir
from trainconsole.trainers.builtin import data, models
from trainconsole.trainers.builtin.loop import train
from trainconsole.trainers.builtin.optim import LrSchedule
from trainconsole.trainers.lifecycle.signals import StopFlag
from trainconsole.trainers.strategies import EpochSampler, make_strategy


class Recorder:
    """An in-memory event writer."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, kind: str, **fields: Any) -> None:
        self.events.append({"type": kind, **fields})

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


def train_in_process(tmp_path: Path, config: dict) -> Recorder:
    run = RunDir.create(tmp_path, "run")
    recorder = Recorder()
    outcome = train(make_strategy(config), config, run, recorder, StopFlag())
    assert outcome.status == "finished"
    return recorder


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reduced_precision_learns(tmp_path: Path, precision: str) -> None:
    (tmp_path / "runs").mkdir()
    config = make_config(train={"precision": precision, "epochs": 3, "batch_size": 32, "threads": 2})
    rec = train_in_process(tmp_path, config)
    assert rec.of("started")[0]["precision"] == (precision if CUDA else "bf16")
    if precision == "fp16" and not CUDA:  # fp16 needs CUDA: falls back to bf16 and says so
        assert rec.of("warning")[0]["code"] == "fp16_on_cpu"
    else:
        assert "fp16_on_cpu" not in [w["code"] for w in rec.of("warning")]
    losses = [e["loss"] for e in rec.of("step")]
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0] * 0.7
    assert rec.of("eval")[-1]["val_acc"] > 0.5


def test_lr_schedules_depend_only_on_the_step() -> None:
    cosine = LrSchedule("cosine", 0.1, 100)
    assert cosine.lr_at(0) == pytest.approx(0.1) and cosine.lr_at(50) == pytest.approx(0.05)
    assert cosine.lr_at(100) == pytest.approx(0.0, abs=1e-12)
    step = LrSchedule("step", 0.1, 90)
    assert [step.lr_at(s) for s in (0, 30, 60, 89)] == pytest.approx([0.1, 0.01, 0.001, 0.001])
    assert not LrSchedule("none", 0.1, 10).active


def test_digits_resized_to_three_channels() -> None:
    split = data.build(make_config(data={"image_size": 16, "channels": 3}))
    assert split.input_shape == (3, 16, 16) and split.num_classes == 10
    assert (len(split.train), len(split.val)) == (1438, 359)
    x, y = split.train.tensors
    assert x.dtype == torch.float32 and 0 <= float(x.min()) and float(x.max()) <= 1
    assert torch.equal(x[:, 0], x[:, 2])


def test_synthetic_is_seeded() -> None:
    config = make_config(data={"name": "synthetic", "samples": 50, "shape": [2, 4, 4], "classes": 3})
    a, b = data.build(config), data.build(config)
    assert torch.equal(a.train.tensors[0], b.train.tensors[0]) and a.input_shape == (2, 4, 4)
    assert a.num_classes == 3 and len(a.train) + len(a.val) == 50


def test_tensor_batches_cover_the_epoch_and_resume_mid_epoch() -> None:
    config = make_config(data={"name": "synthetic", "samples": 100, "shape": [1, 2, 2]})
    from trainconsole.trainers.builtin.batches import make_batches

    ds = data.build(config).train
    batches = make_batches(ds, 16, True, make_strategy(config), seed=7)
    full = [y for _, y in batches.epoch(3)]
    assert len(full) == len(batches) == 5 and sum(len(y) for y in full) == 80
    tail = [y for _, y in batches.epoch(3, skip=2)]
    assert all(torch.equal(a, b) for a, b in zip(full[2:], tail, strict=True))  # same order, minus two
    assert not torch.equal(torch.cat(full), torch.cat([y for _, y in batches.epoch(4)]))
    assert sorted(torch.cat([x.flatten(1)[:, 0] for x, _ in batches.epoch(3)]).tolist()) == sorted(
        ds.tensors[0].flatten(1)[:, 0].tolist())


def test_epoch_sampler_is_a_permutation_per_epoch() -> None:
    sampler = EpochSampler(range(10), shuffle=True, seed=1)
    sampler.set_epoch(2)
    first = list(sampler)
    assert sorted(first) == list(range(10)) and list(sampler) == first


def test_small_cnn_fits_any_input() -> None:
    for shape in [(1, 8, 8), (3, 32, 32), (1, 1, 1), (2, 5, 7)]:
        model = models.small_cnn(shape, 4)
        assert model(torch.zeros(2, *shape)).shape == (2, 4)


@pytest.mark.slow
def test_transfer_learning_loads_weights_replaces_head_and_freezes(tmp_path: Path) -> None:
    source = models.torchvision_model("resnet18", 1000)
    torch.save({f"module.{k}": v for k, v in source.state_dict().items()}, tmp_path / "r18.pt")
    config = make_config(model={"name": "resnet18", "weights": str(tmp_path / "r18.pt"),
                                "freeze_backbone": True})
    model = models.build(config, 10, (3, 32, 32))
    assert model.fc.out_features == 10
    assert torch.equal(model.conv1.weight, source.conv1.weight)
    params, trainable = models.count_params(model)
    assert trainable == 512 * 10 + 10 and params > 11_000_000
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "head"), [("mobilenet_v3_small", "classifier.3"),
                                            ("squeezenet1_0", "classifier.1"), ("densenet121", "classifier")])
def test_replace_head_finds_each_family_head(name: str, head: str) -> None:
    model = models.replace_head(models.torchvision_model(name, 1000), 7)
    assert dict(model.named_modules())[head] is models.find_head(model)[2]
    model.eval()
    assert model(torch.zeros(1, 3, 64, 64)).shape == (1, 7)


class Items(torch.utils.data.Dataset):
    """A map-style dataset that is not a TensorDataset: batches go through a DataLoader."""

    def __len__(self) -> int:
        return 50

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.full((1, 2, 2), float(i)), torch.tensor(i % 3)


@pytest.mark.parametrize("workers", [0, 1])
def test_dataloader_batches_follow_the_sampler_and_skip(workers: int) -> None:
    from trainconsole.trainers.builtin.batches import LoaderBatches, make_batches

    batches = make_batches(Items(), 8, True, make_strategy(make_config()), num_workers=workers, seed=3)
    assert isinstance(batches, LoaderBatches) and len(batches) == 7
    order = [int(v) for x, _ in batches.epoch(1) for v in x[:, 0, 0, 0]]
    assert sorted(order) == list(range(50)) and order != list(range(50))
    again = [int(v) for x, _ in batches.epoch(1, skip=3) for v in x[:, 0, 0, 0]]
    assert again == order[24:]


def test_a_dataset_goes_to_the_gpu_only_within_its_share_of_the_memory_cap() -> None:
    # gpu-check on an H100: 8,192 32x32 images (100 MB, twice with an epoch's reordered copy) under a
    # 256 MiB cap left resnet18 nothing; the batch finder, which holds no dataset, had sized the batch
    from trainconsole.trainers.builtin.batches import ON_DEVICE_LIMIT, on_device

    images = 8192 * 3 * 32 * 32 * 4 + 8192 * 8
    assert on_device(images) and on_device(images, cap_mb=1024)
    assert not on_device(images, cap_mb=256)
    assert not on_device(ON_DEVICE_LIMIT + 1)


def test_the_batch_finder_holds_what_the_runs_batches_keep_on_the_gpu() -> None:
    # the training set twice (an epoch's reordered copy), the validation set once; nothing on a CPU
    from torch.utils.data import TensorDataset

    from trainconsole.trainers.builtin.batches import resident_bytes

    train = TensorDataset(torch.zeros(1000, 3, 8, 8), torch.zeros(1000, dtype=torch.long))
    val = TensorDataset(torch.zeros(200, 3, 8, 8), torch.zeros(200, dtype=torch.long))
    one, cuda = 192 * 4 + 8, torch.device("cuda", 0)
    assert resident_bytes(train, val, cuda) == 2 * 1000 * one + 200 * one
    assert resident_bytes(train, val, cuda, cap_mb=1) == 0  # over a quarter of the cap: left on the host
    assert resident_bytes(train, val, torch.device("cpu")) == 0
