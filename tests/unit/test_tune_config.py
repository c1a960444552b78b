"""Tune config: `[tune]` + `[tune.space]` validated before Ray starts, one clear error per bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainconsole import protocol
from trainconsole.protocol import ConfigError
from trainconsole.protocol.tune_config import load_tune

BASE = """
[model]
name = "small_cnn"
[data]
name = "digits"
[train]
epochs = 3
[tune]
search = "random"
num_samples = 4
max_t = 4
[tune.space]
"train.lr" = { loguniform = [1e-4, 1e-1] }
"train.batch_size" = { choice = [32, 64, 128] }
"""


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "tune.toml"
    p.write_text(BASE)
    return p


def test_tune_section_resolved_and_trials_train_max_t_epochs(path: Path) -> None:
    config = load_tune(path)
    tune = config["tune"]
    assert tune["search"] == "random" and tune["num_samples"] == 4 and tune["scheduler"] == "asha"
    assert tune["space"] == {"train.lr": {"loguniform": [1e-4, 0.1]},
                             "train.batch_size": {"choice": [32, 64, 128]}}
    assert config["train"]["epochs"] == 4  # max_t is also the trials' epochs


def test_max_t_defaults_to_train_epochs(path: Path) -> None:
    assert load_tune(path, ["tune.max_t=0"])["tune"]["max_t"] == 3


def test_overrides_reach_tune_and_its_space(path: Path) -> None:
    config = load_tune(path, ["tune.num_samples=2", "tune.space.train.momentum={uniform=[0.5, 0.9]}",
                              "tune.search=hyperopt", "train.seed=3"])
    assert config["tune"]["num_samples"] == 2 and config["tune"]["search"] == "hyperopt"
    assert config["tune"]["space"]["train.momentum"] == {"uniform": [0.5, 0.9]}
    assert config["train"]["seed"] == 3


def test_written_config_reads_back_the_same(path: Path, tmp_path: Path) -> None:
    config = load_tune(path, ["tune.space.train.optimizer={grid=['sgd', 'adam']}"])
    again = tmp_path / "again.toml"
    again.write_text(protocol.dumps(config))
    assert load_tune(again) == config


def test_a_plain_run_ignores_the_tune_section(path: Path) -> None:
    config = protocol.load(path)
    assert "tune" not in config and config["train"]["epochs"] == 3


@pytest.mark.parametrize(
    ("sets", "field", "allowed"),
    [
        (["tune.space={}"], "tune.space", "at least one key"),
        (["tune.search=sobol"], "tune.search", "grid, random, optuna, hyperopt, bayesopt"),
        (["tune.space.train.lr={normal=[0, 1]}"], "tune.space.train.lr", "unknown kind"),
        (["tune.search=bayesopt", "tune.space.train.lr={uniform=[0.01, 0.1]}"],
         "tune.space.train.batch_size", "bayesopt search takes only uniform, quniform"),
        (["tune.space.train.lrate={uniform=[0.01, 0.1]}"], "tune.space.train.lrate", "not a config key"),
        (["tune.space.lr={uniform=[0.01, 0.1]}"], "tune.space.lr", "not a config key"),
        (["tune.space.train.lr={uniform=[0.1, 0.01]}"], "tune.space.train.lr", "low < high"),
        (["tune.space.train.lr={uniform=[0.1, 0.1]}"], "tune.space.train.lr", "low < high"),
        (["tune.space.train.lr={loguniform=[0, 0.1]}"], "tune.space.train.lr", "0 < low"),
        (["tune.space.train.lr={loguniform=[-1, 0.1]}"], "tune.space.train.lr", "0 < low"),
        (["tune.num_samples=0"], "tune.num_samples", ">= 1"),
        (["tune.space.train.lr={uniform=[0, 0.1]}"], "tune.space.train.lr", "train.lr: must be > 0"),
        (["tune.space.train.optimizer={choice=['sgd', 'lion']}"], "tune.space.train.optimizer", "'lion'"),
        (["tune.space.train.batch_size={uniform=[16, 64]}"], "tune.space.train.batch_size", "randint"),
        (["tune.space.train.batch_size={randint=[16.5, 64]}"], "tune.space.train.batch_size", "integers"),
        (["tune.space.train.lr={quniform=[0.01, 0.1, 0]}"], "tune.space.train.lr", "q > 0"),
        (["tune.space.train.lr={choice=[]}"], "tune.space.train.lr", "non-empty list"),
        (["tune.space.train.lr=0.1"], "tune.space.train.lr", "one kind"),
        (["tune.space.data.name={choice=['digits', 'imagefolder']}"], "tune.space.data.name", "data.root"),
        (["tune.search=grid"], "tune.search", "at least one grid key"),
        (["tune.search=optuna", "tune.space.train.optimizer={grid=['sgd', 'adam']}"],
         "tune.space.train.optimizer", "optuna search takes only"),
        (["tune.metric=accuracy"], "tune.metric", "val_acc"),
        (["tune.mode=up"], "tune.mode", "max, min"),
        (["tune.scheduler=hyperband"], "tune.scheduler", "asha, none"),
        (["tune.grace_period=9"], "tune.grace_period", "<= tune.max_t"),
        (["tune.reduction_factor=1"], "tune.reduction_factor", ">= 1.5"),
        (["tune.max_concurrent=0"], "tune.max_concurrent", ">= 1"),
        (["tune.gpus_per_trial=-0.5"], "tune.gpus_per_trial", ">= 0"),
        (["tune.ray_address='not an address'"], "tune.ray_address", "HOST:PORT"),
        (["tune.bogus=1"], "tune.bogus", "unknown key"),
        (["tune.num_samples='many'"], "tune.num_samples", "must be an integer"),
        (["tune.reuse_actors=1"], "tune.reuse_actors", "must be true or false"),
        (["tune.space=3"], "tune.space", "must be a table of search keys"),
        (["strategy.name=ddp"], "strategy.name", "must be single"),
        (["train.lr=-1"], "train.lr", "> 0"),
    ],
)
def test_bad_tune_input_names_the_field(path: Path, sets: list[str], field: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_tune(path, sets)
    assert err.value.field == field, str(err.value)
    assert allowed in str(err.value)
    assert "\n" not in str(err.value)


def test_a_config_without_tune_section_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text("[train]\nepochs = 1\n")
    with pytest.raises(ConfigError) as err:
        load_tune(plain)
    assert err.value.field == "tune"


def test_ranges_of_the_right_shape_pass(path: Path) -> None:
    config = load_tune(path, ["tune.space.train.batch_size={randint=[16, 129]}",
                              "tune.space.train.weight_decay={quniform=[0, 0.01, 0.001]}",
                              "tune.space.data.num_workers={quniform=[0, 2, 1]}"])
    assert config["tune"]["space"]["train.batch_size"] == {"randint": [16, 129]}


def test_gpus_beyond_this_machine_need_a_cluster_and_space_ranges_use_the_key_s_range(path: Path) -> None:
    from trainconsole.protocol import machine

    more = f"tune.gpus_per_trial={machine.gpu_count() + 1}"
    with pytest.raises(ConfigError, match=r"^tune.gpus_per_trial: must be <= \d+, the GPUs visible here"):
        load_tune(path, [more])
    assert load_tune(path, [more, "tune.ray_address='head:6379'"])["tune"]["gpus_per_trial"] >= 1
    with pytest.raises(ConfigError, match=r"^tune.space.train.weight_decay: value 5 is not allowed"):
        load_tune(path, ["tune.space.train.weight_decay={uniform=[0, 5]}"])
    with pytest.raises(ConfigError, match=r"^tune.space.data.num_workers: value 100000 is not allowed"):
        load_tune(path, ["tune.space.data.num_workers={randint=[0, 100001]}"])
    assert load_tune(path, ["tune.space.train.momentum={uniform=[0, 0.99]}"])["tune"]["space"]
