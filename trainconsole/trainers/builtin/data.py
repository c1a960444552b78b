"""Datasets, all offline: digits (ships with scikit-learn), synthetic, imagefolder, mnist, cifar10, plug-ins.

`build(config)` returns `(train_ds, val_ds, num_classes, input_shape)`. In-memory data (digits,
synthetic, mnist/cifar10 when they fit) stays a `TensorDataset`, which the loop batches by slicing.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Subset, TensorDataset

from trainconsole.protocol import Config

from .. import plugins
from ..errors import DataFilesMissing, TrainerError

IN_MEMORY_LIMIT = 1 << 30  # bytes of float32 images above which mnist/cifar10 stay lazy


class DataSplit(NamedTuple):
    """What the loop needs to know about the data."""

    train: Dataset
    val: Dataset
    num_classes: int
    input_shape: tuple[int, ...]


def build(config: Config) -> DataSplit:
    """The train and validation sets named by `data.name`, split by `data.val_fraction`."""
    data, seed = config["data"], config["train"]["seed"]
    name = data["name"]
    if name == "digits":
        return _tensor_split(*_digits(), config)
    if name == "synthetic":
        return _tensor_split(*_synthetic(data, seed), config)
    if name in ("mnist", "cifar10"):
        return _torchvision_builtin(name, config)
    if name == "imagefolder":
        return _imagefolder(config)
    return _plugin(config)


def split_indices(n: int, val_fraction: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded (train, val) split of `range(n)`; both sides get at least one sample."""
    if n < 2:
        raise TrainerError(f"the dataset has {n} sample(s); need at least 2 to split train/val")
    n_val = min(max(1, round(n * val_fraction)), n - 1)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return perm[n_val:], perm[:n_val]


def reshape_images(x: torch.Tensor, image_size: int, channels: int) -> torch.Tensor:
    """Resize N×C×H×W images to `image_size` (0 = keep) and set 1 or 3 channels (0 = keep), once."""
    if image_size and x.shape[-2:] != (image_size, image_size):
        x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", align_corners=False)
    if channels and x.shape[1] != channels:
        x = x.repeat(1, channels, 1, 1) if x.shape[1] == 1 else x.mean(1, keepdim=True)
    return x.contiguous()


def _tensor_split(x: torch.Tensor, y: torch.Tensor, num_classes: int, config: Config) -> DataSplit:
    data = config["data"]
    if data["name"] != "synthetic":  # synthetic already has the shape it was asked for
        x = reshape_images(x, data["image_size"], data["channels"])
    train_idx, val_idx = split_indices(len(x), data["val_fraction"], config["train"]["seed"])
    classes = config["model"]["num_classes"] or num_classes
    return DataSplit(TensorDataset(x[train_idx], y[train_idx]), TensorDataset(x[val_idx], y[val_idx]),
                     classes, tuple(x.shape[1:]))


def _digits() -> tuple[torch.Tensor, torch.Tensor, int]:
    from sklearn.datasets import load_digits  # imported here: only the digits dataset needs it

    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32).div_(16.0).reshape(-1, 1, 8, 8)
    return x, torch.tensor(digits.target, dtype=torch.long), 10


def _synthetic(data: dict[str, Any], seed: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(data["samples"], *data["shape"], generator=g)
    y = torch.randint(0, data["classes"], (data["samples"],), generator=g)
    return x, y, data["classes"]


def _root(config: Config) -> str:
    return os.path.expanduser(config["data"]["root"])


def _torchvision_builtin(name: str, config: Config) -> DataSplit:
    from torchvision import datasets  # lazily: torchvision costs seconds to import

    cls = {"mnist": datasets.MNIST, "cifar10": datasets.CIFAR10}[name]
    try:
        raw = cls(_root(config), train=True, download=False)
    except RuntimeError as e:
        raise DataFilesMissing(f"{name} files not found under data.root = {config['data']['root']!r} "
                               f"(downloads are disabled; expected what torchvision's {cls.__name__} "
                               f"writes there): {e}") from None
    images = torch.as_tensor(raw.data)  # mnist: N×H×W uint8; cifar10: N×H×W×C uint8
    images = images.unsqueeze(1) if images.ndim == 3 else images.permute(0, 3, 1, 2)
    labels = torch.as_tensor(raw.targets, dtype=torch.long)
    return _uint8_split(images, labels, len(raw.classes), config)


def _uint8_split(images: torch.Tensor, labels: torch.Tensor, classes: int, config: Config) -> DataSplit:
    data = config["data"]
    size = data["image_size"] or images.shape[-1]
    channels = data["channels"] or images.shape[1]
    if len(images) * channels * size * size * 4 <= IN_MEMORY_LIMIT:
        return _tensor_split(images.float().div_(255.0), labels, classes, config)
    full = LazyImages(images, labels, data["image_size"], data["channels"])
    train_idx, val_idx = split_indices(len(full), data["val_fraction"], config["train"]["seed"])
    return DataSplit(Subset(full, train_idx.tolist()), Subset(full, val_idx.tolist()),
                     config["model"]["num_classes"] or classes, tuple(full[0][0].shape))


class LazyImages(Dataset):
    """uint8 images converted and resized one at a time (when the float copy would not fit in memory)."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, image_size: int, channels: int) -> None:
        self.images, self.labels, self.size, self.channels = images, labels, image_size, channels

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.images[i : i + 1].float().div_(255.0)
        return reshape_images(x, self.size, self.channels)[0], self.labels[i]


def _imagefolder(config: Config) -> DataSplit:
    from torchvision import datasets, transforms

    data = config["data"]
    steps: list[Any] = []
    if data["image_size"]:
        steps.append(transforms.Resize((data["image_size"], data["image_size"])))
    if data["channels"]:
        steps.append(transforms.Grayscale(data["channels"]))
    full = datasets.ImageFolder(_root(config), transform=transforms.Compose([*steps, transforms.ToTensor()]))
    return _split_dataset(full, config, len(full.classes))


def _plugin(config: Config) -> DataSplit:
    made = plugins.factory(config["data"]["name"])(config)
    if isinstance(made, tuple) and len(made) == 2:
        train, val = made
        return DataSplit(train, val, _num_classes(config, train), tuple(train[0][0].shape))
    return _split_dataset(made, config, None)


def _split_dataset(full: Dataset, config: Config, classes: int | None) -> DataSplit:
    train_idx, val_idx = split_indices(len(full), config["data"]["val_fraction"], config["train"]["seed"])
    train, val = Subset(full, train_idx.tolist()), Subset(full, val_idx.tolist())
    num_classes = config["model"]["num_classes"] or classes or _num_classes(config, full)
    return DataSplit(train, val, num_classes, tuple(full[0][0].shape))


def _num_classes(config: Config, ds: Any) -> int:
    """model.num_classes, else what the dataset says (`classes`, `num_classes`, or tensor labels)."""
    if config["model"]["num_classes"]:
        return config["model"]["num_classes"]
    if hasattr(ds, "classes"):
        return len(ds.classes)
    if hasattr(ds, "num_classes"):
        return int(ds.num_classes)
    if isinstance(ds, TensorDataset) and len(ds.tensors) == 2:
        return int(ds.tensors[1].max()) + 1
    raise TrainerError("cannot tell how many classes the dataset has: set model.num_classes")
