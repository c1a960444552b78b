"""Config schema: defaults, overrides, and one clear error per bad value."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from trainconsole import protocol
from trainconsole.protocol import ConfigError, machine
from trainconsole.protocol.tune_config import load_tune


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_defaults_validate_and_round_trip_through_toml() -> None:
    config = protocol.defaults()
    assert protocol.validate(tomllib.loads(protocol.dumps(config))) == config


def test_overrides_are_typed_as_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "[train]\nlr = 0.1\n")
    sets = ["train.lr=0.5", "train.epochs=2", "model.name=resnet18", "data.shape=[1,8,8]"]
    config = protocol.load(path, sets)
    assert config["train"]["lr"] == 0.5 and config["train"]["epochs"] == 2
    assert config["model"]["name"] == "resnet18" and config["data"]["shape"] == [1, 8, 8]


def test_int_is_accepted_where_a_float_is_expected() -> None:
    assert protocol.validate({"train": {"lr": 1}})["train"]["lr"] == 1.0


@pytest.mark.parametrize(
    ("raw", "field", "allowed"),
    [
        ({"train": {"lr": 0}}, "train.lr", "> 0"),
        ({"train": {"lr": -1.0}}, "train.lr", "> 0"),
        ({"train": {"batch_size": 0}}, "train.batch_size", ">= 1"),
        ({"train": {"epochs": "ten"}}, "train.epochs", 'must be an integer (got "ten")'),
        ({"train": {"epochs": True}}, "train.epochs", "must be an integer (got true)"),
        ({"train": {"batch_size": 1.5}}, "train.batch_size", 'must be an integer or "auto" (got 1.5)'),
        ({"train": {"batch_size": "big"}}, "train.batch_size", 'must be an integer or "auto" (got "big")'),
        ({"train": {"lr": "fast"}}, "train.lr", "must be a number"),
        ({"train": {"tensorboard": "yes"}}, "train.tensorboard", 'must be true or false (got "yes")'),
        ({"script": {"csv_logs": 3}}, "script.csv_logs", "must be a string (got 3)"),
        ({"script": {"mlruns": ["a"]}}, "script.mlruns", 'must be a string (got ["a"])'),
        ({"train": {"optimizer": 1}}, "train.optimizer", "must be one of sgd, adam, adamw (got 1)"),
        ({"data": {"shape": "3x32x32"}}, "data.shape", "must be a list of three positive integers"),
        ({"strategy": {"devices": "many"}}, "strategy.devices", 'must be "auto", a count >= 1, or a list'),
        ({"strategy": {"split_points": [7, 3]}}, "strategy.split_points", "increasing layer indices"),
        ({"strategy": {"split_points": ["a"]}}, "strategy.split_points", "increasing layer indices"),
        ({"train": {"optimizer": "lion"}}, "train.optimizer", "sgd, adam, adamw"),
        ({"train": {"bogus": 1}}, "train.bogus", "unknown key"),
        ({"bogus": {}}, "bogus", "unknown section"),
        ({"model": {"name": "resnet1000"}}, "model.name", "torchvision"),
        ({"data": {"name": "imagenet"}}, "data.name", "digits"),
        ({"data": {"name": "imagefolder"}}, "data.root", "required"),
        ({"data": {"name": "mnist", "root": "/no/such/dir"}}, "data.root", "existing local folder"),
        ({"strategy": {"name": "fsdp"}}, "strategy.name", "single, dp, ddp, model_parallel"),
        ({"strategy": {"devices": 0}}, "strategy.devices", "auto"),
        ({"strategy": {"name": "ddp", "nnodes": 2, "node_rank": 1}}, "strategy.master_port", "every node"),
        ({"train": {"precision": "fp8"}}, "train.precision", "fp32"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(raw: dict, field: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        protocol.validate(raw)
    message = str(err.value)
    assert message.startswith(field + ":") and allowed in message and "\n" not in message


def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "weights.pt"
    fake.write_bytes(b"not a checkpoint at all")
    with pytest.raises(ConfigError, match=r"^model.weights: is not a PyTorch checkpoint"):
        protocol.validate({"model": {"weights": str(fake)}})


def test_malformed_toml_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[train]\nlr = 0.1\nepochs = = 3\n")
    with pytest.raises(ConfigError) as caught:
        protocol.load(path)
    assert str(caught.value) == f"{path}: line 3: is not valid TOML: Invalid value (column 10)"


def test_bad_override_syntax() -> None:
    with pytest.raises(ConfigError, match=r"^--set: must look like section.key=value"):
        protocol.apply_override({}, "lr0.1")


def test_model_names_match_installed_torchvision() -> None:
    import torchvision.models as models

    from trainconsole.protocol.model_names import TORCHVISION_CLASSIFIERS

    assert TORCHVISION_CLASSIFIERS == set(models.list_models(module=models))


def test_protocol_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, trainconsole.protocol; "
            "print(any(m.split('.')[0] in ('torch', 'numpy') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("path", sorted(Path("examples").glob("*.toml")), ids=lambda p: p.name)
def test_every_example_config_validates_to_what_it_says(path: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Run configs as runs, tune configs with their [tune] section (the transfer examples name a weights file
    the user provides: a stand-in checkpoint here), on the machine they are written for: 2 cores, no GPU
    (`devices = 2` is two CPU workers there; a box with one GPU refuses it, rightly). Every key the file
    sets keeps its value, every key it leaves out gets the schema's default (a tune config's max_t is its
    trials' epochs)."""
    monkeypatch.setattr(machine, "cpu_count", lambda: 2)
    monkeypatch.setattr(machine, "gpu_count", lambda: 0)
    weights = tmp_path / "weights.pt"
    with zipfile.ZipFile(weights, "w") as z:
        z.writestr("weights/data.pkl", b"")
    raw = protocol.config.read(path)
    sets = [f"model.weights={json.dumps(str(weights))}"] if raw.get("model", {}).get("weights") else []
    config = load_tune(path, sets) if "tune" in raw else protocol.load(path, sets)
    expected = protocol.defaults()
    for section, values in raw.items():
        if section != "tune":
            expected[section].update(values)
    if sets:
        expected["model"]["weights"] = str(weights)
    if "tune" in raw:
        expected["train"]["epochs"] = raw["tune"].get("max_t") or expected["train"]["epochs"]
    assert {section: config[section] for section in expected} == expected


def test_keys_left_out_get_their_defaults_and_the_others_keep_their_values() -> None:
    config = protocol.validate({"train": {"lr": 0.5, "optimizer": "adam"}, "data": {"name": "synthetic"}})
    assert config["train"]["lr"] == 0.5 and config["train"]["optimizer"] == "adam"
    assert config["data"]["name"] == "synthetic"
    for section, fields in protocol.SCHEMA.items():
        for key, field in fields.items():
            if (section, key) not in {("train", "lr"), ("train", "optimizer"), ("data", "name")}:
                assert config[section][key] == field.default, f"{section}.{key}"


def test_every_number_has_a_range() -> None:
    """A range (both ends) for every int/float key of the run and tune schemas."""
    from trainconsole.protocol.tune_config import TUNE_SCHEMA

    fields = {f"{s}.{k}": f for s, keys in protocol.SCHEMA.items() for k, f in keys.items()}
    fields.update({f"tune.{k}": f for k, f in TUNE_SCHEMA.items()})
    numbers = {n: f for n, f in fields.items() if {int, float} & set(f.type if isinstance(f.type, tuple)
                                                                      else (f.type,))}
    unbounded = [n for n, f in numbers.items() if not f.choices and (f.low is None or f.high is None)]
    assert not unbounded and len(numbers) >= 30


#: Issue 16's nonsense inputs: (a --set for `trainconsole run` or `tune`, the field its one line names).
NONSENSE = [
    ("train.batch_size=9223372036854775807", "train.batch_size"),
    ("strategy.devices=1000000000000", "strategy.devices"),  # with strategy.name = dp, accelerator = cpu
    ("train.momentum=1e16", "train.momentum"),
    ("train.momentum=inf", "train.momentum"),
    ("train.weight_decay=inf", "train.weight_decay"),
    ("train.lr=1e300", "train.lr"),
    ("train.threads=1000000", "train.threads"),
    (f"train.max_memory_mb={2**62}", "train.max_memory_mb"),
    ("strategy.master_port=70000", "strategy.master_port"),
    ("data.num_workers=100000", "data.num_workers"),
    ("data.image_size=1000000", "data.image_size"),
    ("strategy.devices=[0, 0]", "strategy.devices"),  # under ddp
    (f"strategy.min_free_mb={10**12}", "strategy.min_free_mb"),
    ("tune.seed=-1", "tune.seed"),
    ("tune.cpus_per_trial=inf", "tune.cpus_per_trial"),
    ("tune.max_concurrent=1000000", "tune.max_concurrent"),
    ("tune.reduction_factor=1.0000001", "tune.reduction_factor"),
    ("tune.gpus_per_trial=GPUS_PLUS_ONE", "tune.gpus_per_trial"),  # one more than this machine has
    ("tune.space.train.momentum={uniform=[0, 1e16]}", "tune.space.train.momentum"),
    ("tune.metric=best_val_acc", "tune.metric"),  # no trial reports it
    ("tune.mode=max", "tune.mode"),  # with metric = val_loss: would maximise the loss
]
#: Through the real CLI (one subprocess each); the rest through the same validation in-process.
THROUGH_CLI = {"train.batch_size", "strategy.devices", "tune.gpus_per_trial", "tune.space.train.momentum"}
TUNE_TOML = (RUN_TOML := '[model]\nname = "small_cnn"\n[data]\nname = "digits"\n[train]\nepochs = 2\n') + (
    '[tune]\nsearch = "random"\nnum_samples = 2\n[tune.space]\n"train.lr" = { loguniform = [1e-3, 0.1] }\n')


def nonsense_args(item: str, field: str) -> tuple[str, list[str]]:
    """The subcommand and the --set list that feed one nonsense input."""
    item = item.replace("GPUS_PLUS_ONE", str(machine.gpu_count() + 1))
    context = {"strategy.devices=1000000000000": ["strategy.name=dp", "strategy.accelerator=cpu"],
               "strategy.devices=[0, 0]": ["strategy.name=ddp"], "tune.mode=max": ["tune.metric=val_loss"]}
    return ("tune" if field.startswith("tune.") else "run"), [*context.get(item, []), item]


@pytest.mark.parametrize(("item", "field"), NONSENSE, ids=[i for i, _ in NONSENSE])
def test_nonsense_is_refused_in_one_line_naming_its_field(item: str, field: str, tmp_path: Path) -> None:
    command, sets = nonsense_args(item, field)
    path = write(tmp_path, TUNE_TOML if command == "tune" else RUN_TOML)
    with pytest.raises(ConfigError) as err:
        (load_tune if command == "tune" else protocol.load)(path, sets)
    assert err.value.field == field and "\n" not in str(err.value), str(err.value)
    assert str(err.value).startswith(f"{field}: ") and " must " in str(err.value), str(err.value)


def test_nonsense_through_the_real_cli_exits_2_and_creates_no_run(tmp_path: Path, home: Path) -> None:
    exe = str(Path(sys.executable).parent / "trainconsole")
    for item, field in [(i, f) for i, f in NONSENSE if f in THROUGH_CLI]:
        command, sets = nonsense_args(item, field)
        path = write(tmp_path, TUNE_TOML if command == "tune" else RUN_TOML)
        args = [exe, command, str(path), *[a for s in sets for a in ("--set", s)]]
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and f": {field}: " in lines[0], (item, out.stderr)
        assert not out.stdout
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


def test_a_range_s_reason_and_the_machine_s_limit_are_in_the_error() -> None:
    with pytest.raises(ConfigError) as err:
        protocol.validate({"train": {"threads": machine.cpu_count() + 1}})
    assert f"<= {machine.cpu_count()}, the CPU cores of this machine" in str(err.value)
    assert protocol.validate({"train": {"threads": machine.cpu_count()}})["train"]["threads"] > 0
    for good in ({"train": {"momentum": 0.0}}, {"strategy": {"master_port": 65535}},
                 {"strategy": {"name": "ddp", "devices": machine.cpu_count(), "accelerator": "cpu"}},
                 {"train": {"batch_size": "auto"}}):
        protocol.validate(good)
    with pytest.raises(ConfigError, match=r"^train.lr: must be > 0 and <= 10: .*\(got nan\)$"):
        protocol.validate({"train": {"lr": float("nan")}})


SEARCHERS = ("grid", "random", "optuna", "hyperopt", "bayesopt")
METRICS = ("val_acc", "val_loss", "train_loss")


@pytest.mark.parametrize("search", SEARCHERS)
def test_every_searcher_is_accepted(search: str, tmp_path: Path) -> None:
    sets = [f"tune.search={search}", 'tune.space.train.lr={uniform=[0.001, 0.1]}']
    if search == "grid":
        sets.append("tune.space.train.batch_size={grid=[32, 64]}")
    assert load_tune(write(tmp_path, TUNE_TOML), sets)["tune"]["search"] == search


@pytest.mark.parametrize(("item", "line"), [
    ("tune.search=sgd", f"tune.search: must be one of {', '.join(SEARCHERS)} (got \"sgd\")"),
    ("tune.metric=accuracy", f"tune.metric: must be one of {', '.join(METRICS)} (got \"accuracy\")"),
    ("tune.scheduler=hyperband", "tune.scheduler: must be one of asha, none (got \"hyperband\")"),
])
def test_a_name_outside_its_list_is_refused_naming_every_allowed_one(item: str, line: str,
                                                                     tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_tune(write(tmp_path, TUNE_TOML), [item])
    assert str(err.value) == line


def test_tune_mode_follows_the_metric(tmp_path: Path) -> None:
    path = write(tmp_path, TUNE_TOML)
    assert load_tune(path, ["tune.metric=val_loss"])["tune"]["mode"] == "min"
    assert load_tune(path, ["tune.metric=train_loss", "tune.mode=min"])["tune"]["mode"] == "min"
    assert load_tune(path)["tune"]["mode"] == "max"


def test_at_run_start_a_batch_above_the_data_warns_and_cpu_devices_are_the_cores() -> None:
    """What only the run can know: the training set's size (one warning with the batches per epoch), and
    the cores of the machine it trains on (a clear refusal, never a MemoryError) where a config was not
    validated here; `strategy.oversubscribe` lets more workers than cores through."""
    from trainconsole.trainers.builtin import setup
    from trainconsole.trainers.errors import StrategyUnavailable
    from trainconsole.trainers.strategies import devices, make_strategy

    config = protocol.validate({"train": {"batch_size": 4096}, "strategy": {"accelerator": "cpu"}})
    warnings: list[dict] = []
    parts = setup.build(make_strategy(config), config, lambda **f: warnings.append(f))
    assert [w["code"] for w in warnings] == ["batch_larger_than_data"]
    assert f"({len(parts.split.train)} samples): 1 batch(es) per epoch" in warnings[0]["message"]
    config["train"]["batch_size"] = 64
    warnings.clear()
    setup.build(make_strategy(config), config, lambda **f: warnings.append(f))
    assert warnings == []
    for name in ("dp", "ddp", "model_parallel"):
        many = protocol.validate({"strategy": {"name": name, "accelerator": "cpu"}})
        many["strategy"]["devices"] = machine.cpu_count() + 1  # validated elsewhere: not on this machine
        with pytest.raises(StrategyUnavailable, match=f"this machine has {machine.cpu_count()} CPU cores"):
            make_strategy(many)
        many["strategy"]["oversubscribe"] = True
        assert len(devices.resolve(many)) == machine.cpu_count() + 1


def test_every_key_s_type_error_says_what_is_allowed_in_a_user_s_words() -> None:
    """A value of the wrong type for any key of the run and tune schemas: `must be an integer`, never
    Python's `must be int or str`; the value shown as TOML writes it."""
    from trainconsole.protocol.tune_config import TUNE_SCHEMA

    fields = {f"{s}.{k}": f for s, keys in protocol.SCHEMA.items() for k, f in keys.items()}
    fields.update({f"tune.{k}": f for k, f in TUNE_SCHEMA.items()})
    for name, spec in fields.items():
        wrong = 1 if spec.type is dict else {"x": True}  # no other key takes a table
        with pytest.raises(ConfigError) as err:
            spec.coerce(name, wrong)
        message = str(err.value)
        assert message.startswith(f"{name}: must be ") and not PYTHON_TYPES.search(message), message
        assert message.endswith(" (got 1)" if wrong == 1 else " (got { \"x\" = true })"), message
    assert len(fields) >= 50


PYTHON_TYPES = re.compile(r"\b(int|str|float|bool|dict|NoneType|True|False)\b")
