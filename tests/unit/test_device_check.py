"""`strategy.devices` against the machine, for every strategy and for tune configs, on simulated machines:
a 2-core one without a GPU (like this one) and a 16-core one with 2 GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainconsole import protocol
from trainconsole.protocol import ConfigError, machine
from trainconsole.protocol.tune_config import load_tune

STRATEGIES = ("single", "dp", "ddp", "model_parallel")


@pytest.fixture
def cpu_box(monkeypatch: pytest.MonkeyPatch) -> None:
    """2 cores, no GPU."""
    monkeypatch.setattr(machine, "cpu_count", lambda: 2)
    monkeypatch.setattr(machine, "gpu_count", lambda: 0)


@pytest.fixture
def gpu_box(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 cores, 2 GPUs."""
    monkeypatch.setattr(machine, "cpu_count", lambda: 16)
    monkeypatch.setattr(machine, "gpu_count", lambda: 2)


def strategy(name: str, **keys: object) -> dict:
    return protocol.validate({"strategy": {"name": name, **keys}})["strategy"]


def refusal(name: str, **keys: object) -> str:
    with pytest.raises(ConfigError) as err:
        strategy(name, **keys)
    assert "\n" not in str(err.value)
    return str(err.value)


@pytest.mark.parametrize("name", STRATEGIES)
def test_without_a_gpu_cpu_workers_are_at_most_the_cores(name: str, cpu_box: None) -> None:
    assert strategy(name, devices=2)["devices"] == 2  # the examples' ddp on 2 cores
    assert strategy(name, devices="auto")["devices"] == "auto"  # falls back to the CPU
    assert refusal(name, devices=3) == (
        "strategy.devices: must be <= 2, the CPU cores of this machine (no GPU in use); or set "
        "strategy.oversubscribe = true to run more CPU workers than cores (got 3)")
    assert strategy(name, devices=3, oversubscribe=True)["devices"] == 3


@pytest.mark.parametrize("name", STRATEGIES)
def test_without_a_gpu_gpus_are_refused(name: str, cpu_box: None) -> None:
    assert refusal(name, devices=[0, 1]) == (
        'strategy.devices: lists GPU indices, but no GPU is visible on this machine: give "auto" or a count '
        "of CPU workers, e.g. 2 (got [0, 1])")
    assert refusal(name, accelerator="cuda").startswith('strategy.accelerator: is "cuda", but no GPU')


@pytest.mark.parametrize("name", STRATEGIES)
def test_with_gpus_only_those_that_exist(name: str, gpu_box: None) -> None:
    assert strategy(name, devices=[1, 0])["devices"] == [1, 0]
    assert strategy(name, devices=2, accelerator="cuda")["devices"] == 2
    assert refusal(name, devices=[0, 2]) == (
        "strategy.devices: names GPU 2, but this machine has 2 visible GPUs (indices 0 to 1) (got [0, 2])")
    assert refusal(name, devices=3).startswith("strategy.devices: must be <= 2, the GPUs visible here")
    assert strategy(name, devices=3, accelerator="cpu")["devices"] == 3  # CPU workers: 16 cores
    assert "strategy.accelerator = \"cpu\"" in refusal(name, devices=[0], accelerator="cpu")


def test_a_count_of_one_and_auto_never_read_the_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML costs ~50 ms: the defaults and `devices = 1` do not ask it."""
    def no(*_: object) -> int:
        raise AssertionError("read the GPUs")

    monkeypatch.setattr(machine, "gpu_count", no)
    for devices in ("auto", 1):
        assert strategy("ddp", devices=devices)["devices"] == devices


TUNE = ('[data]\nname = "digits"\n[train]\nepochs = 2\n[tune]\nnum_samples = 2\n'
        '[tune.space]\n"train.lr" = { loguniform = [1e-3, 0.1] }\n')


def test_tune_configs_are_checked_here_unless_their_trials_run_on_a_cluster(tmp_path: Path,
                                                                           cpu_box: None) -> None:
    path = tmp_path / "tune.toml"
    path.write_text(TUNE)
    with pytest.raises(ConfigError, match="^strategy.devices: lists GPU indices"):
        load_tune(path, ["strategy.devices=[0]"])
    with pytest.raises(ConfigError, match="^tune.space.strategy.devices: value 3 is not allowed: strategy"):
        load_tune(path, ['tune.space.strategy.devices={choice=[1, 3]}'])
    on_cluster = load_tune(path, ["strategy.devices=[0]", "tune.ray_address='head:6379'"])
    assert on_cluster["strategy"]["devices"] == [0]
