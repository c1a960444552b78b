"""The run config: schema, defaults, validation and `--set` overrides (stdlib only)."""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import machine, script_fields
from .config_error import ConfigError, toml_text
from .config_file import read
from .devices import check_devices
from .machine import Limit
from .model_names import NOT_A_CHAIN, TORCHVISION_CLASSIFIERS

__all__ = ["SCHEMA", "Config", "ConfigError", "Field", "apply_override", "defaults", "dumps", "load",
           "ray_address", "read", "validate"]

BUILTIN_MODELS = ("small_cnn",)
BUILTIN_DATASETS = ("digits", "synthetic", "imagefolder", "mnist", "cifar10")
DATASETS_WITH_ROOT = ("imagefolder", "mnist", "cifar10")
PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
RAY_ADDRESS = re.compile(r"^(auto|[\w.\-]+:\d+)$")
#: Each type in a user's words: what a value of the wrong type is told is allowed.
TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list",
              dict: "a table"}


@dataclass(frozen=True)
class Field:
    """One config key: its type, default, what is allowed (`choices`, a range, a `check`) and why.

    A range is `low`..`high` (inclusive unless `low_open` / `high_open`); `high` may be a machine `Limit`.
    It applies to the key's numbers (a key that also takes a string, like `batch_size = 'auto'`, checks
    the string in `check`). `why` says in the error why the range is what it is. `allowed` says what a
    value of the wrong type is told, where the type's words (`an integer`) or the choices say too little.
    """

    type: type | tuple[type, ...]
    default: Any
    check: Callable[[Any], str | None] | None = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | Limit | None = None
    low_open: bool = False
    high_open: bool = False
    why: str = ""
    allowed: str = ""

    def coerce(self, name: str, value: Any) -> Any:
        """`value` as this key takes it (an integer where a number is wanted becomes a float); a
        ConfigError in a user's words if it is of another type (TOML's true is not an integer)."""
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        if float in types and _is_number(value):
            return float(value)
        if isinstance(value, bool) is not (bool in types) or not isinstance(value, types):
            raise ConfigError(name, "must be " + self.type_text(), value)
        return value

    def type_text(self) -> str:
        """What this key takes, in words: `an integer or "auto"`, `one of sgd, adam, adamw`, `a number`."""
        if self.allowed:
            return self.allowed
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        return " or ".join(TYPE_WORDS[t] for t in types)

    def problem(self, value: Any) -> str | None:
        """What is allowed, if `value` (already of the right type) is not; None if it is."""
        if self.choices and value not in self.choices:
            return "must be one of " + ", ".join(map(str, self.choices))
        if _is_number(value) and not self.in_range(value):
            return self.range_text() + (f": {self.why}" if self.why else "")
        return self.check(value) if self.check else None

    def in_range(self, v: float) -> bool:
        """Whether a number lies in the range (NaN never does)."""
        high = self.high
        if isinstance(high, Limit):  # every machine has at least 1 of each: read it (NVML: ~50 ms) only above
            high = high.value() if v > 1 else None
        low_ok = self.low is None or (v > self.low if self.low_open else v >= self.low)
        high_ok = high is None or (v < high if self.high_open else v <= high)
        return bool(low_ok and high_ok) and not (isinstance(v, float) and math.isnan(v))

    def range_text(self) -> str:
        """`must be >= 0 and < 1`, `must be <= 16 (the CPU cores of this machine)`."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {_show(self.low)}")
        if isinstance(self.high, Limit):
            parts.append(f"{'<' if self.high_open else '<='} {_show(self.high.value())}, {self.high.what}")
        elif self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {_show(self.high)}")
        return "must be " + " and ".join(parts) if parts else ""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(v)


BATCH_SIZE = 'an integer or "auto"'
MODEL_NAME = 'small_cnn, a torchvision classification model (e.g. resnet18) or "package.module:factory"'
DATASET_NAME = "one of " + ", ".join(BUILTIN_DATASETS) + ' or "package.module:factory"'
DEVICES = '"auto", a count >= 1, or a list of GPU indices like [0, 1]'
SHAPE = "a list of three positive integers [C, H, W]"
SPLIT_POINTS = "a list of increasing layer indices >= 1, e.g. [3, 7], or [] to balance by parameters"


def _batch_size(v: int | str) -> str | None:
    return None if v == "auto" or isinstance(v, int) else "must be " + BATCH_SIZE


def _model_name(v: str) -> str | None:
    if v in BUILTIN_MODELS or v in TORCHVISION_CLASSIFIERS or _plugin_ok(v):
        return None
    return "must be " + MODEL_NAME


def _dataset_name(v: str) -> str | None:
    return None if v in BUILTIN_DATASETS or _plugin_ok(v) else "must be " + DATASET_NAME


def _split_points(v: list[Any]) -> str | None:
    """Layer indices; whether the last is below the model's layer count is known only at the run."""
    ints = all(isinstance(p, int) and not isinstance(p, bool) for p in v)
    increasing = ints and all(a < b for a, b in itertools.pairwise([0, *v]))  # the first >= 1
    return None if increasing else "must be " + SPLIT_POINTS


def _plugin_ok(v: str) -> bool:
    if not PLUGIN.match(v):
        return False
    try:
        return importlib.util.find_spec(v.split(":")[0]) is not None
    except (ImportError, ValueError):
        return False


def ray_address(v: str) -> str | None:
    """'' (no cluster: a search's own local Ray, a ddp run's own processes), 'auto' or HOST:PORT."""
    if v.startswith("ray://"):  # Ray Client: the driver would run on the head, away from the run's log
        return ("must be the cluster's HOST:PORT (from `ray start --head`), not a ray:// client address: "
                "the run's driver runs here, beside the run directory the console reads")
    return None if not v or RAY_ADDRESS.match(v) else "must be empty (a local Ray), 'auto' or HOST:PORT"


def _devices(v: Any) -> str | None:
    """`auto`, a count (its range is the field's), or a list of distinct GPU indices."""
    if v == "auto" or (isinstance(v, int) and not isinstance(v, bool)):
        return None
    if not (isinstance(v, list) and v and all(isinstance(i, int) and not isinstance(i, bool) for i in v)):
        return "must be " + DEVICES
    if not all(0 <= i < MAX_DEVICES for i in v) or len(v) > MAX_DEVICES:
        return f"must list GPU indices from 0 to {MAX_DEVICES - 1}"
    if len(set(v)) != len(v):
        return "must not list a GPU twice (two ranks or stages on one GPU)"
    return None


MAX_BATCH = 2**20  # far above any batch that fits a device; beyond it a batch is a typo
MAX_IMAGE = 4096
MAX_DEVICES = 1024  # per node
MAX_COUNT = 2**31 - 1  # counts of epochs, steps, samples: what torch's int32 indices and samplers take
SEED_MAX = 2**32 - 1  # NumPy's (and Ray's searchers') seed range
CPU_BOUND = "more would only oversubscribe the cores"

SCHEMA: dict[str, dict[str, Field]] = {
    "model": {
        "name": Field(str, "small_cnn", _model_name, "small_cnn, a torchvision model, or module:factory",
                      allowed=MODEL_NAME),
        "num_classes": Field(int, 0, help="0 = take it from the dataset", low=0, high=1_000_000),
        "weights": Field(str, "", help="local state_dict / checkpoint file to start from"),
        "freeze_backbone": Field(bool, False, help="train only the new head"),
    },
    "data": {
        "name": Field(str, "digits", _dataset_name, "digits, synthetic, imagefolder, mnist, cifar10",
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
        "batch_size": Field((int, str), 64, _batch_size, "a number, or 'auto': the largest that fits",
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
        "devices": Field((str, int, list), "auto", _devices, "auto, a count, or a list of GPU indices",
                         low=1, high=MAX_DEVICES, why="'auto', a count per node, or a list of GPU indices",
                         allowed=DEVICES),
        "oversubscribe": Field(bool, False, help="CPU: allow more workers/stages than cores (each gets a "
                               "share of a core: slower, but runs multi-rank code on a small machine)"),
        "micro_batches": Field(int, 4, low=1, high=MAX_BATCH, why="model_parallel: at most one per sample"),
        "split_points": Field(list, [], _split_points, "model_parallel: stage boundaries (layer indices)",
                              allowed=SPLIT_POINTS),
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
        "tensorboard": Field(str, "", help="a folder the script writes TensorBoard event files to"),
        "csv_logs": Field(str, "", help="a folder the script's Lightning CSVLogger writes metrics.csv under"),
        "mlruns": Field(str, "", help="an MLflow file store the script logs to (besides ./mlruns)"),
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


def validate(raw: dict[str, Any], here: bool = True) -> Config:
    """Check every section and key against SCHEMA; return the full config with defaults filled in.

    `here`: the devices are checked against this machine (False: they are another machine's, e.g. a
    search's trials on a Ray cluster, which check them where they run)."""
    config = defaults()
    for section, values in raw.items():
        if section == "tune":  # a tune run's own section (tune_config.py checks it); a plain run ignores it
            continue
        if section not in SCHEMA:
            raise ConfigError(section, "unknown section; allowed: " + ", ".join(SCHEMA))
        if not isinstance(values, dict):
            raise ConfigError(section, "must be a table")
        for key, value in values.items():
            config[section][key] = _check(section, key, value)
    _check_together(config)
    if here and not config["strategy"]["ray_address"]:  # on a Ray cluster, the ranks' devices are its nodes'
        check_devices(config["strategy"])
    return config


def _check(section: str, key: str, value: Any) -> Any:
    name = f"{section}.{key}"
    spec = SCHEMA[section].get(key)
    if spec is None:
        raise ConfigError(name, "unknown key; allowed: " + ", ".join(SCHEMA[section]))
    value = spec.coerce(name, value)
    problem = spec.problem(value)
    if problem:
        raise ConfigError(name, problem, value)
    return value


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


def dumps(config: Config) -> str:
    """Write a config as TOML (the subset this schema uses: tables of scalars and lists)."""
    lines: list[str] = []
    for section, values in config.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_text(v)}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines)
