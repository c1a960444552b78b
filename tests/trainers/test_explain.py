"""Pointed explanations: each fault ends with a one-line cause and a hint naming the fix, and leaves
the events and checkpoints already written intact."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from trainer_runs import events, make_config, make_run, train

from trainconsole.console.core.run_state import RunState
from trainconsole.protocol import run_status
from trainconsole.trainers.troubles import precision_probe
from trainconsole.trainers.troubles.explain import explain
from trainconsole.trainers.troubles.pointed import layer_trace

FAULTS = textwrap.dedent('''
    import os
    import signal

    import torch
    from torch import nn
    from torch.utils.data import Dataset, TensorDataset

    def fixed_size(config, num_classes, input_shape):
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 8 * 8, num_classes))

    def tabular(config):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(96, 2, generator=g)
        return TensorDataset(x, (x[:, 0] > 0).long())

    def channels_last(config):
        g = torch.Generator().manual_seed(0)
        x = torch.rand(96, 8, 8, 1, generator=g)  # H, W, C: as PIL / numpy images come
        return TensorDataset(x, torch.arange(96) % 10)

    def one_channel_cnn(config, num_classes, input_shape):
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(4, num_classes))

    def thirteen_labels(config):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(64, 1, 8, 8, generator=g)
        return TensorDataset(x, torch.arange(64) % 13), TensorDataset(x[:16], torch.arange(16) % 10)

    class Poisoned(nn.Module):
        """Returns NaN on its `at`-th training forward only."""

        def __init__(self, num_classes, at):
            super().__init__()
            self.fc, self.calls, self.at = nn.Linear(64, num_classes), 0, at

        def forward(self, x):
            self.calls += self.training
            out = self.fc(x.flatten(1))
            return out * float("nan") if self.training and self.calls == self.at else out

    def poisoned(config, num_classes, input_shape):
        return Poisoned(num_classes, 3)

    def poisoned_in_epoch_2(config, num_classes, input_shape):
        return Poisoned(num_classes, 30)  # 23 steps per epoch at batch 64

    class Crashing(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            if i == 7:
                os.kill(os.getpid(), signal.SIGKILL)  # a worker dies like the OOM killer does it
            return torch.zeros(1, 8, 8), i % 10

    def crashing(config):
        return Crashing(), Crashing()

    def buggy(config, num_classes, input_shape):
        return Buggy(num_classes)

    class Buggy(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.fc = nn.Linear(64, num_classes)

        def forward(self, x):
            return self.fc(x.flatten(1)) + undefined_name  # noqa: F821
''')


def fault_run(tc_home: Path, tmp_path: Path, **sections: dict) -> object:
    (tmp_path / "tc_faults.py").write_text(FAULTS)
    sections.setdefault("train", {}).setdefault("epochs", 1)
    run = make_run(tc_home, make_config(**sections))
    train(run, pythonpath=str(tmp_path))
    return run


def failed_of(run: object) -> dict:
    (failed,) = events(run, "failed")
    assert events(run)[-1]["type"] == "failed" and run_status(run) == "failed"
    assert "\n" not in failed["cause"] and failed["hint"]
    lines = run.events.read_bytes().splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines)  # every line still parses
    shown(run, failed["cause"], failed["hint"])
    return failed


def shown(run: object, cause: str, hint: str, field: str = "cause") -> None:
    """`trainconsole logs` prints the whole cause and hint, and the console's log pane holds both."""
    logs = subprocess.run([sys.executable, "-m", "trainconsole.console", "logs", run.id], capture_output=True,
                          text=True,
                          env={**os.environ, "TRAINCONSOLE_HOME": str(run.path.parents[1])}, check=True)
    assert f"{field}={cause}" in logs.stdout and f"hint={hint}" in logs.stdout
    console = RunState(run.id)
    for event in events(run):
        console.apply(event)
    assert any(cause in note.text and note.hint == hint for note in console.notes)


def test_shape_mismatch_names_the_layer_and_shapes(tc_home: Path, tmp_path: Path) -> None:
    run = fault_run(tc_home, tmp_path, model={"name": "tc_faults:fixed_size"}, data={"image_size": 16})
    failed = failed_of(run)
    assert failed["cause"].startswith("Pointed: shape mismatch in layer 2 (Linear(in_features=256")
    assert "input [1, 1024]" in failed["cause"]
    assert "0 [1, 1, 16, 16] -> [1, 4, 16, 16]; 1 [1, 4, 16, 16] -> [1, 1024]" in failed["hint"]
    assert "data.image_size (now 16)" in failed["hint"]


def test_samples_of_the_wrong_shape_name_the_sample_shape_and_what_the_model_takes(
        tc_home: Path, tmp_path: Path) -> None:
    # 2-feature tabular data into the demo's CNN: refused while the model is built
    failed = failed_of(fault_run(tc_home, tmp_path, data={"name": "tc_faults:tabular"}))
    assert failed["cause"] == ("ShapeError: small_cnn takes images of shape [C, H, W]; the data's samples "
                               "have shape [2]")
    assert "the data's samples have shape [2]" in failed["hint"] and "plug-in model" in failed["hint"]
    # the same data into a plug-in CNN: fails in its first forward, explained from the replay
    failed = failed_of(fault_run(tc_home, tmp_path, data={"name": "tc_faults:tabular"},
                                 model={"name": "tc_faults:one_channel_cnn"}))
    assert failed["cause"].startswith("Pointed: shape mismatch in layer 0 (Conv2d(1, 4")
    assert "Expected 3D (unbatched) or 4D (batched) input to conv2d" in failed["cause"]
    assert failed["hint"].startswith("the data's samples have shape [2], the model's first layer (Conv2d(1, "
                                     "4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))) takes [1, H, W]")
    # channels-last images: named as such, with the permute that fixes them
    failed = failed_of(fault_run(tc_home, tmp_path, data={"name": "tc_faults:channels_last"},
                                 model={"name": "tc_faults:one_channel_cnn"}))
    assert "the data's samples have shape [8, 8, 1]" in failed["hint"]
    assert "channels-last" in failed["hint"] and "x.permute(2, 0, 1): [1, 8, 8]" in failed["hint"]


def test_label_outside_num_classes_names_the_label(tc_home: Path, tmp_path: Path) -> None:
    run = fault_run(tc_home, tmp_path, data={"name": "tc_faults:thirteen_labels"},
                    model={"num_classes": 10}, train={"batch_size": 32})
    failed = failed_of(run)
    assert failed["cause"].startswith("Pointed: label 12 is outside [0, 10) (model.num_classes = 10;")
    assert "model.num_classes to at least 13" in failed["hint"]


def test_nonfinite_skip_drops_the_step_and_counts_it(tc_home: Path, tmp_path: Path) -> None:
    run = fault_run(tc_home, tmp_path, model={"name": "tc_faults:poisoned"},
                    train={"nonfinite": "skip", "epochs": 2})
    (warning,) = [e for e in events(run, "warning") if e["code"] == "nonfinite_skipped"]
    assert warning["step"] == 3 and warning["skipped"] == 1 and "lower train.lr" in warning["hint"]
    shown(run, warning["message"], warning["hint"], "message")
    (finished,) = events(run, "finished")
    assert finished["skipped_steps"] == 1 and math.isfinite(finished["val_loss"])  # trained on, not NaN
    assert finished["val_loss"] == pytest.approx(events(run, "eval")[-1]["val_loss"])
    state = torch.load(run.last_ckpt, weights_only=True)
    assert all(torch.isfinite(v).all() for v in state["model"].values())


def test_nonfinite_fail_keeps_the_earlier_checkpoint(tc_home: Path, tmp_path: Path) -> None:
    run = fault_run(tc_home, tmp_path, model={"name": "tc_faults:poisoned_in_epoch_2"}, train={"epochs": 3})
    failed = failed_of(run)
    assert failed["cause"].startswith("NonFiniteLossError") and "lower train.lr (now 0.05)" in failed["hint"]
    assert [e["epoch"] for e in events(run, "checkpoint")] == [1, 1]  # last.pt and best.pt of epoch 1
    state = torch.load(run.last_ckpt, weights_only=True)
    assert state["epoch"] == 1 and all(torch.isfinite(v).all() for v in state["model"].values())


def test_crashed_dataloader_worker(tc_home: Path, tmp_path: Path) -> None:
    run = fault_run(tc_home, tmp_path, data={"name": "tc_faults:crashing", "num_workers": 1},
                    model={"num_classes": 10})
    failed = failed_of(run)
    assert "DataLoader worker" in failed["cause"]
    assert "data.num_workers = 0 (now 1)" in failed["hint"]


def test_exception_in_a_plugin_names_the_plugin_and_its_line(tc_home: Path, tmp_path: Path) -> None:
    run = fault_run(tc_home, tmp_path, model={"name": "tc_faults:buggy"})
    failed = failed_of(run)
    line = next(i for i, text in enumerate(FAULTS.splitlines()) if "+ undefined_name" in text)
    assert failed["cause"].startswith("NameError: name 'undefined_name' is not defined")
    assert failed["cause"].endswith(f"[in plug-in tc_faults:buggy, tc_faults.py line {line + 1}]")
    assert f"your plug-in code at tc_faults:buggy, tc_faults.py line {line + 1}" in failed["hint"]


def test_cudnn_not_init_hint() -> None:
    why = explain(RuntimeError("cuDNN error: CUDNN_STATUS_NOT_INIT"), make_config())
    assert why.cause == "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INIT"
    assert "cuDNN could not start" in why.hint


def test_layer_trace_stops_at_the_failing_layer() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.Linear(9, 2))
    trace = layer_trace(model, torch.zeros(1, 1, 8, 8))
    assert [(t["name"], t["in"], t["out"]) for t in trace] == [
        ("0", [1, 1, 8, 8], [1, 64]), ("1", [1, 64], [1, 8]), ("2", [1, 8], None)]


def probe(timings: dict[str, float] | None = None, precision: str = "bf16") -> tuple[float | None, list[dict],
                                                                                  nn.Module]:
    """Run the precision probe on a small CPU model. With `timings` ({"fp32": s, "chosen": s}) the probe's
    passes still run, but each is said to take those seconds: the ratio is the test's, not the load's."""
    from trainconsole.trainers.builtin.optim import Precision
    from trainconsole.trainers.strategies.single import SingleDevice

    strategy = SingleDevice(make_config(strategy={"accelerator": "cpu"}))
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    data = torch.utils.data.TensorDataset(torch.randn(16, 1, 8, 8), torch.zeros(16, dtype=torch.long))
    chosen = Precision(precision, strategy.device, lambda **f: None)

    def timer(model: nn.Module, x: torch.Tensor, y: torch.Tensor, context: object, device: object) -> float:
        precision_probe.step_seconds(model, x, y, context, device)
        return timings["chosen" if context == chosen.autocast else "fp32"]

    warnings: list[dict] = []
    ratio = precision_probe.check(model, data, strategy, chosen, lambda kind, **f: warnings.append(f),
                                  timer=timer if timings else None)
    return ratio, warnings, model


def test_a_much_slower_precision_is_warned_about_with_the_ratio() -> None:
    ratio, warnings, model = probe({"fp32": 0.002, "chosen": 0.1})
    assert ratio == pytest.approx(50.0)
    (warning,) = warnings
    assert warning["code"] == "slow_precision" and warning["ratio"] == 50.0
    assert warning["message"] == ("train.precision = 'bf16' runs 50x slower than fp32 on cpu "
                                  "(forward+backward of 8 samples: 100 ms vs 2.0 ms)")
    assert "train.precision = 'fp32'" in warning["hint"]
    assert all(p.grad is None for p in model.parameters())


def test_a_precision_less_than_the_slow_ratio_slower_is_not_warned_about() -> None:
    below = precision_probe.SLOW_RATIO * 0.95
    ratio, warnings, _ = probe({"fp32": 0.01, "chosen": 0.01 * below})
    assert ratio == pytest.approx(below) and warnings == []


def test_the_real_probe_times_both_precisions_and_leaves_the_model_as_it_was() -> None:
    """End to end with the real clock: a ratio, at most one warning, no gradient left behind, training
    mode restored. How fast bf16 is here is the machine's business, not the test's."""
    ratio, warnings, model = probe()
    assert ratio is not None and ratio > 0 and math.isfinite(ratio)
    assert [w["code"] for w in warnings] in ([], ["slow_precision"])
    assert all(p.grad is None for p in model.parameters()) and model.training
    assert probe(precision="fp32")[0] is None  # fp32 is not compared with itself
