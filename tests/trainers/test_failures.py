"""Failures end with a `failed` event (one-line cause, hint, traceback tail) and a non-zero exit."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from trainer_runs import events, make_config, make_run, train

from trainconsole import protocol
from trainconsole.trainers.builtin import data
from trainconsole.trainers.errors import DataFilesMissing, NonFiniteLossError
from trainconsole.trainers.troubles.explain import explain

PLUGINS = textwrap.dedent('''
    from torch import nn

    def broken(config, num_classes, input_shape):
        raise RuntimeError("the factory could not build its model")

    def fixed_size(config, num_classes, input_shape):
        # Wired for 1x8x8 inputs whatever the data says: a classic shape bug.
        return nn.Sequential(nn.Flatten(), nn.Linear(64, num_classes))

    def deep_linear(config, num_classes, input_shape):
        # Eight linear layers with nothing between them: at lr 10 the loss is nan within a few steps.
        width = input_shape[0] * input_shape[1] * input_shape[2]
        return nn.Sequential(nn.Flatten(), *(nn.Linear(width, width) for _ in range(7)),
                             nn.Linear(width, num_classes))
''')


def failed_run(tc_home: Path, tmp_path: Path, config: dict) -> tuple[int, dict]:
    """Run a config that should fail; return the exit code and the single `failed` event."""
    (tmp_path / "tc_test_plugins.py").write_text(PLUGINS)
    run = make_run(tc_home, config)
    code = train(run, pythonpath=str(tmp_path))
    failed = events(run, "failed")
    assert len(failed) == 1 and events(run)[-1]["type"] == "failed", run.stderr.read_text()
    assert "\n" not in failed[0]["cause"] and failed[0]["traceback"].count("\n") < 15
    assert protocol.run_status(run) == "failed" and run.read_info()["exit_code"] == code
    return code, failed[0]


def test_plugin_factory_that_raises(tc_home: Path, tmp_path: Path) -> None:
    code, failed = failed_run(tc_home, tmp_path, make_config(model={"name": "tc_test_plugins:broken"}))
    assert code == 1
    assert failed["cause"].startswith("RuntimeError: the factory could not build its model [in plug-in "
                                      "tc_test_plugins:broken, tc_test_plugins.py line 5]")
    assert "tc_test_plugins.py" in failed["traceback"]


def test_shape_mismatch_names_the_config_keys(tc_home: Path, tmp_path: Path) -> None:
    config = make_config(model={"name": "tc_test_plugins:fixed_size"}, data={"image_size": 16})
    code, failed = failed_run(tc_home, tmp_path, config)
    assert code == 1 and "mat1 and mat2 shapes cannot be multiplied" in failed["cause"]
    assert "data.image_size (now 16)" in failed["hint"] and "model.num_classes" in failed["hint"]


@pytest.mark.slow
def test_diverging_loss_is_caught_at_a_step_event(tc_home: Path, tmp_path: Path) -> None:
    code, failed = failed_run(tc_home, tmp_path, make_config(
        model={"name": "tc_test_plugins:deep_linear"}, train={"lr": 10.0, "epochs": 2}))
    assert code == 1 and failed["cause"].startswith("NonFiniteLossError: training loss is")
    assert "lower train.lr (now 10.0)" in failed["hint"]


def test_invalid_config_exits_2_before_importing_torch(tc_home: Path, tmp_path: Path) -> None:
    run = make_run(tc_home, make_config())
    run.config.write_text(run.config.read_text().replace("lr = 0.05", "lr = -1.0"))
    assert train(run) == 2
    (failed,) = events(run, "failed")
    assert failed["cause"].startswith("ConfigError: train.lr") and "config.toml" in failed["hint"]


def test_missing_run_directory_exits_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "trainconsole.trainers", str(tmp_path / "nope")],
                          capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "is not a run directory" in proc.stderr


def test_missing_mnist_files_name_data_root(tmp_path: Path) -> None:
    config = make_config(data={"name": "mnist", "root": str(tmp_path)})
    with pytest.raises(DataFilesMissing, match=f"data.root = '{tmp_path}'") as err:
        data.build(config)
    assert "put the dataset under data.root" in explain(err.value, config).hint


@pytest.mark.parametrize(("exc", "cause", "hint"), [
    (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore"),
     "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "reduce train.batch_size (now 64)"),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"),
     "RuntimeError: [enforce fail", "reduce train.batch_size"),
    (RuntimeError("Given groups=1, weight of size [64, 3, 7, 7], expected input[64, 1, 8, 8] to have 3 "
                  "channels, but got 1 channels instead"), "RuntimeError: Given groups=1", "data.channels"),
    (RuntimeError("CUDA error: device-side assert triggered"), "RuntimeError: CUDA error", "num_classes"),
    (IndexError("Target 12 is out of bounds."), "IndexError: Target 12", "outside [0, num_classes)"),
    (NonFiniteLossError(40, float("nan")), "NonFiniteLossError: training loss is nan at step 40",
     "lower train.lr (now 0.05)"),
    (ValueError("something else"), "ValueError: something else", ""),
])
def test_explain(exc: BaseException, cause: str, hint: str) -> None:
    why = explain(exc, make_config())
    assert why.cause.startswith(cause) and "\n" not in why.cause
    assert hint in why.hint and (hint or why.hint == "")
