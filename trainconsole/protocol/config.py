"""The run config: schema, defaults, validation and `--set` overrides (stdlib only). A key is a `Field`
(config_field.py); what its values may be, in words and checks, is config_values.py."""

from __future__ import annotations

import os
import tomllib
from typing import Any

from . import machine, places, script_fields
from .config_error import ConfigError, toml_text
from .config_field import Field, checked
from .config_file import read
from .config_values import (
    BATCH_SIZE,
    CPU_BOUND,
    DATASET_NAME,
    DATASETS_WITH_ROOT,
    DEVICES,
    MAX_BATCH,
    MAX_COUNT,
    MAX_DEVICES,
    MAX_IMAGE,
    MODEL_NAME,
    SEED_MAX,
    SHAPE,
    SPLIT_POINTS,
    check_batch_size,
    check_dataset_name,
    check_device_list,
    check_model_name,
    check_split_points,
    ray_address,
)
from .devices import check_devices
from .model_names import NOT_A_CHAIN

__all__ = ["SCHEMA", "Config", "ConfigError", "Field", "apply_override", "defaults", "dumps", "load",
           "ray_address", "read", "validate"]

SCHEMA: dict[str, dict[str, Field]] = {
    "model": {
        "name": Field(str, "small_cnn", check_model_name, "small_cnn, a torchvision model, or module:factory",
                      allowed=MODEL_NAME),
        "num_classes": Field(int, 0, help="0 = take it from the dataset", low=0, high=1_000_000),
        "weights": Field(str, "", help="local state_dict / checkpoint file to start from"),
        "freeze_backbone": Field(bool, False, help="train only the new head"),
    },
    "data": {
        "name": Field(str, "digits", check_dataset_name, "digits, synthetic, imagefolder, mnist, cifar10",
                      allowed=DATASET_NAME),
        "root": Field(str, "", help="local folder for imagefolder, mnist, cifar10"),
        "val_fraction": Field(float, 0.2, low=0, high=1, low_open=True, high_open=True,
                              why="both the training and the validation set need samples"),
        "num_workers": Field(int, 0, help="DataLoader worker processes; 0 = load in the training process",
                             low=0, high=machine.CPUS, why=CPU_BOUND),
        "image_size": Field(int, 0, help="0 = native size; otherwise resize to N x N", low=0, high=MAX_IMAGE,
                            why="one such image is already 64M values per channel"),
        "channels": Field(int, 0, help="0 = native; 1 or 3", choices=(0, 1, 3)),
        "samples": Field(int, 2048, help="synthetic: number of samples", low=1, high=10_000_000,
                         why="synthetic data is generated in memory"),
        "classes": Field(int, 10, help="synthetic: number of classes", low=2, high=1_000_000),
        "shape": Field(list, [3, 32, 32], help="synthetic: C, H, W", allowed=SHAPE),
    },
    "train": {
        "epochs": Field(int, 5, low=1, high=MAX_COUNT),
        "batch_size": Field((int, str), 64, check_batch_size, "a number, or 'auto': the largest that fits",
                            low=1, high=MAX_BATCH, why="samples per step; larger is a typo, not a batch",
                            allowed=BATCH_SIZE),
        "lr": Field(float, 0.05, low=0, high=10, low_open=True,
                    why="a larger learning rate diverges"),
        "optimizer": Field(str, "sgd", choices=("sgd", "adam", "adamw")),
        "momentum": Field(float, 0.9, low=0, high=1, high_open=True,
                          why="the fraction of the last update kept; 1 or more never forgets and diverges"),
        "weight_decay": Field(float, 0.0, low=0, high=1,
                              why="a finite fraction of the weights taken off per step"),
        "lr_schedule": Field(str, "none", choices=("none", "cosine", "step")),
        "precision": Field(str, "fp32", choices=("fp32", "bf16", "fp16")),
        "seed": Field(int, 0, low=0, high=SEED_MAX, why="NumPy's seed range"),
        "max_steps": Field(int, 0, help="0 = no limit", low=0, high=MAX_COUNT),
        "threads": Field(int, 0, help="torch threads per process; 0 = torch's default", low=0,
                         high=machine.CPUS, why=CPU_BOUND),
        "resume_from": Field(str, "", help="checkpoint file to resume from"),
        "max_memory_mb": Field(int, 0, help="0 = no cap; GPU: this process's share of the device; "
                               "CPU: data memory the trainer may add after setup", low=0,
                               high=machine.HOST_MEMORY, why="a cap above what exists caps nothing"),
        "oom": Field(str, "recover", choices=("recover", "fail"),
                     help="recover: halve the micro-batch and redo"),
        "nonfinite": Field(str, "fail", choices=("fail", "skip"),
                           help="skip: drop a step whose loss is NaN/Inf"),
        "tensorboard": Field(bool, False, help="scalars and histograms into <run>/tensorboard"),
        "histogram_every": Field(int, 1, low=1, high=MAX_COUNT,
                                 help="epochs between weight histograms (events; TensorBoard when on)"),
        "memory_history": Field(bool, False, help="GPU: record allocations, snapshot at an out-of-memory"),
        "grad_clip_norm": Field(float, 0.0, low=0, high=1e6, why="a finite norm",
                                help="0 = off; clip the gradients' total norm after accumulation, "
                                "every strategy"),
        "disk_full_wait_s": Field(float, 1800.0, low=0, high=7 * 86400, why="a week at most",
                                  help="on a full disk, pause and retry this long before failing"),
    },
    "strategy": {
        "name": Field(str, "single", choices=("single", "dp", "ddp", "model_parallel")),
        "accelerator": Field(str, "auto", choices=("auto", "cpu", "cuda")),
        "devices": Field((str, int, list), "auto", check_device_list,
                         "auto, a count, or a list of GPU indices", low=1, high=MAX_DEVICES,
                         why="'auto', a count per node, or a list of GPU indices",
                         allowed=DEVICES),
        "oversubscribe": Field(bool, False, help="CPU: allow more workers/stages than cores (each gets a "
                               "share of a core: slower, but runs multi-rank code on a small machine)"),
        "micro_batches": Field(int, 4, low=1, high=MAX_BATCH, why="model_parallel: at most one per sample"),
        "split_points": Field(list, [], check_split_points,
                              "model_parallel: stage boundaries (layer indices)", allowed=SPLIT_POINTS),
        "nnodes": Field(int, 1, low=1, high=MAX_DEVICES * 64),
        "node_rank": Field(int, 0, low=0, high=MAX_DEVICES * 64),
        "master_addr": Field(str, "127.0.0.1"),
        "master_port": Field(int, 0, help="0 = pick a free port", low=0, high=65535, why="a TCP port"),
        "ray_address": Field(str, "", ray_address, "ddp: place the ranks on this Ray cluster (HOST:PORT)"),
        "max_failures": Field(int, 0, help="ddp on a Ray cluster: restarts from the last checkpoint after a "
                              "rank or node is lost (0 = the run fails)", low=0, high=1000,
                              why="each restart re-places every rank"),
        "min_workers": Field(int, 0, help="ddp on a Ray cluster: a restart may go on with this many ranks "
                             "if fewer fit (0 = all of them)", low=0, high=MAX_DEVICES * 64),
        "queue": Field(bool, False, help="wait until the devices have min_free_mb free, then start"),
        "min_free_mb": Field(int, 0, help="queue: free MB each device needs (host memory on CPU)", low=0,
                             high=machine.DEVICE_MEMORY, why="more than a device has would wait forever"),
    },
    "script": {
        "path": Field(str, "", script_fields.script_path, "the training script of a run of kind script"),
        "args": Field(list, [], script_fields.strings, "its command-line arguments",
                      allowed="a list of strings"),
        "nproc": Field(int, 0, help="0 = plain python; N: torch.distributed.run, N processes", low=0,
                       high=MAX_DEVICES, why="processes per node"),
        "patterns": Field(list, [], script_fields.patterns, "metric regexes with named groups (?P<loss>...)",
                          allowed="a list of regex strings"),
        "parse_output": Field(bool, True, help="read metrics from the script's printed lines"),
        "measure": Field(bool, True, help="measure step, loss, lr, epoch, phase and memory inside the "
                         "script's processes (a probe installed when it imports torch)"),
        "tensorboard": Field(str, "", help="a folder the script writes TensorBoard event files to"),
        "csv_logs": Field(str, "", help="a folder the script's Lightning CSVLogger writes metrics.csv under"),
        "mlruns": Field(str, "", help="an MLflow file store the script logs to (besides ./mlruns)"),
        "python": Field(str, "", script_fields.python_path, "the Python the script and torchrun's ranks run "
                        "with (empty: the active environment's, else trainconsole's)"),
    },
    "notify": {
        "command": Field(str, "", help="a shell command that gets the run's final event as JSON on stdin "
                         "(beats TRAINCONSOLE_NOTIFY when both are set)"),
    },
}

Config = dict[str, dict[str, Any]]


def defaults() -> Config:
    """A config with every key at its default."""
    return {sec: {k: _copy(f.default) for k, f in keys.items()} for sec, keys in SCHEMA.items()}


def _copy(v: Any) -> Any:
    return list(v) if isinstance(v, list) else v


def load(path: str | os.PathLike[str], overrides: list[str] = ()) -> Config:  # type: ignore[assignment]
    """Read a TOML config file, apply `section.key=value` overrides, and validate it."""
    raw = read(path)
    for item in overrides:
        apply_override(raw, item)
    return validate(raw)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `--set section.key=value`; the value is read as TOML, else taken as a string."""
    key, sep, text = item.partition("=")
    section, dot, name = key.strip().partition(".")
    if not sep or not dot or not name:
        raise ConfigError("--set", "must look like section.key=value", item)
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    raw.setdefault(section, {})[name] = value


def validate(raw: dict[str, Any], here: bool = True, search: bool = False) -> Config:
    """Check every section and key against SCHEMA; return the full config with defaults filled in.

    `here`: the devices are checked against this machine (False: they are another machine's, e.g. a
    search's trials on a Ray cluster, which check them where they run). `search`: the config of a
    search (`tune_config`, which takes its `[tune]` out first)."""
    config = defaults()
    for section, values in raw.items():
        if section == "tune":  # a tune run's own section (tune_config.py checks it); a plain run ignores it
            continue
        place = places.with_section(section)
        if place is not None:  # a place's own section (`[slurm]`: only a run sent there has one)
            config[section] = place.check_section(values)
            continue
        if section not in SCHEMA:
            raise ConfigError(section, "unknown section; allowed: " + ", ".join(SCHEMA))
        if not isinstance(values, dict):
            raise ConfigError(section, "must be a table")
        for key, value in values.items():
            config[section][key] = checked(section, SCHEMA[section], key, value)
    _check_together(config)
    for place in places.asked_by(config):  # a place's devices may be its nodes', checked there
        here = place.check_config(config, search) and here
    if here and not config["strategy"]["ray_address"]:  # on a Ray cluster, the ranks' devices are its nodes'
        check_devices(config["strategy"])
    return config


def _check_together(config: Config) -> None:
    data, model, train, strategy = config["data"], config["model"], config["train"], config["strategy"]
    if data["name"] in DATASETS_WITH_ROOT:
        if not data["root"]:
            raise ConfigError("data.root", f"is required for dataset {data['name']}: a local folder")
        if not os.path.isdir(os.path.expanduser(data["root"])):
            raise ConfigError("data.root", "must be an existing local folder", data["root"])
    shape = data["shape"]
    if len(shape) != 3 or not all(isinstance(n, int) and n >= 1 for n in shape):
        raise ConfigError("data.shape", "must be " + SHAPE, shape)
    for name, path in (("model.weights", model["weights"]), ("train.resume_from", train["resume_from"])):
        if path:
            check_checkpoint_file(name, path)
    if strategy["ray_address"] or strategy["max_failures"] or strategy["min_workers"]:
        _check_ray(strategy)
    elif strategy["node_rank"] >= strategy["nnodes"]:
        raise ConfigError("strategy.node_rank", f"must be < strategy.nnodes ({strategy['nnodes']})")
    if strategy["name"] != "ddp" and strategy["nnodes"] > 1:
        raise ConfigError("strategy.nnodes", "must be 1 unless strategy.name = 'ddp'")
    if strategy["nnodes"] > 1 and not strategy["master_port"] and not strategy["ray_address"]:
        raise ConfigError("strategy.master_port", "must be set (the same on every node) when nnodes > 1")
    _check_splittable(model["name"], strategy["name"])


def _check_ray(strategy: dict[str, Any]) -> None:
    """A ddp run on a Ray cluster: Ray places the ranks (no node_rank, no GPU list), rank 0's node gives
    the rendezvous; the restart keys mean nothing without a cluster."""
    for key in ("max_failures", "min_workers"):
        if strategy[key] and not strategy["ray_address"]:
            raise ConfigError(f"strategy.{key}", "only goes with a Ray cluster (strategy.ray_address, or "
                              "trainconsole run --ray-address HOST:PORT)", strategy[key])
    if strategy["name"] != "ddp":
        raise ConfigError("strategy.ray_address", "places the ranks of a ddp run on a Ray cluster: "
                          f"strategy.name must be 'ddp', not {strategy['name']!r}", strategy["ray_address"])
    if strategy["node_rank"]:
        raise ConfigError("strategy.node_rank", "must be 0 on a Ray cluster: Ray places the ranks")
    devices = strategy["devices"]
    if isinstance(devices, list):
        raise ConfigError("strategy.devices", 'must be "auto" or a count of ranks on a Ray cluster (Ray '
                          "places each rank on a GPU of some node)", devices)
    if isinstance(devices, int) and strategy["min_workers"] > devices:
        raise ConfigError("strategy.min_workers", f"must be <= strategy.devices ({devices}): the ranks a "
                          "restart may go on with", strategy["min_workers"])


def _check_splittable(model: str, strategy: str) -> None:
    """model_parallel needs a chain of layers to cut: refuse a torchvision model known to have none."""
    if strategy == "model_parallel" and model in NOT_A_CHAIN:
        raise ConfigError("model.name", f"{model} cannot be split into stages by strategy.name = "
                          f"'model_parallel': {NOT_A_CHAIN[model]}; use ddp, or another model")


def check_checkpoint_file(name: str, path: str) -> None:
    """Refuse a file that is not a torch checkpoint (torch.save writes a zip holding a pickle)."""
    import zipfile

    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        raise ConfigError(name, "must be an existing checkpoint file", path)
    try:
        with zipfile.ZipFile(path) as z:
            ok = any(n.endswith("data.pkl") for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        ok = False
    if not ok:
        raise ConfigError(name, "is not a PyTorch checkpoint (expected a file written by torch.save)", path)


#: The built-in trainer's sections: a script run has none of them (its lr is the one its steps measured).
TRAINER_SECTIONS = ("model", "data", "train")


def dumps(config: Config) -> str:
    """Write a config as TOML (the subset this schema uses: tables of scalars and lists); a script run's
    holds only what it has, never the built-in trainer's defaults (`train.lr` would match `lr<0.1`)."""
    script = bool((config.get("script") or {}).get("path"))
    lines: list[str] = []
    for section, values in config.items():
        if script and section in TRAINER_SECTIONS:
            continue
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_text(v)}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines)
