"""Config schema: defaults, overrides, and one clear error per bad value."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from trainers import protocol
from trainers.protocol import ConfigError


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
        ({"train": {"epochs": "ten"}}, "train.epochs", "must be int"),
        ({"train": {"epochs": True}}, "train.epochs", "must be int"),
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

    from trainers.protocol.model_names import TORCHVISION_CLASSIFIERS

    assert TORCHVISION_CLASSIFIERS == set(models.list_models(module=models))


def test_protocol_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, trainers.protocol; "
            "print(any(m.split('.')[0] in ('torch', 'numpy') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("path", sorted(Path("examples").glob("*.toml")), ids=lambda p: p.name)
def test_every_example_config_validates(path: Path) -> None:
    try:
        config = protocol.load(path)
    except ConfigError as err:  # the transfer example names a weights file the user provides
        assert err.field == "model.weights", err
        return
    assert config["model"]["name"] and config["strategy"]["name"]
