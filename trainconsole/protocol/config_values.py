"""What a config value may be, in words and as checks: names of models and data sets, devices, a Ray
address, and the limits a typo is told apart by (stdlib only)."""

from __future__ import annotations

import importlib.util
import itertools
import re
from typing import Any

from .launch import reach_launch_dir
from .model_names import TORCHVISION_CLASSIFIERS

BUILTIN_MODELS = ("small_cnn",)
BUILTIN_DATASETS = ("digits", "synthetic", "imagefolder", "mnist", "cifar10")
DATASETS_WITH_ROOT = ("imagefolder", "mnist", "cifar10")
PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
RAY_ADDRESS = re.compile(r"^(auto|[\w.\-]+:\d+)$")

BATCH_SIZE = 'an integer or "auto"'
MODEL_NAME = 'small_cnn, a torchvision classification model (e.g. resnet18) or "package.module:factory"'
DATASET_NAME = "one of " + ", ".join(BUILTIN_DATASETS) + ' or "package.module:factory"'
DEVICES = '"auto", a count >= 1, or a list of GPU indices like [0, 1]'
SHAPE = "a list of three positive integers [C, H, W]"
SPLIT_POINTS = "a list of increasing layer indices >= 1, e.g. [3, 7], or [] to balance by parameters"


def check_batch_size(v: int | str) -> str | None:
    return None if v == "auto" or isinstance(v, int) else "must be " + BATCH_SIZE


def check_model_name(v: str) -> str | None:
    if v in BUILTIN_MODELS or v in TORCHVISION_CLASSIFIERS or plugin_ok(v):
        return None
    return "must be " + MODEL_NAME


def check_dataset_name(v: str) -> str | None:
    return None if v in BUILTIN_DATASETS or plugin_ok(v) else "must be " + DATASET_NAME


def check_split_points(v: list[Any]) -> str | None:
    """Layer indices; whether the last is below the model's layer count is known only at the run."""
    ints = all(isinstance(p, int) and not isinstance(p, bool) for p in v)
    increasing = ints and all(a < b for a, b in itertools.pairwise([0, *v]))  # the first >= 1
    return None if increasing else "must be " + SPLIT_POINTS


def plugin_ok(v: str) -> bool:
    if not PLUGIN.match(v):
        return False
    reach_launch_dir()  # a plug-in lives in the launch directory, looked up after the installed packages
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


def check_device_list(v: Any) -> str | None:
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
