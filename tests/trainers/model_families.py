"""Model plug-ins of the families users train (`model.name = "model_families:resnet18"` etc.), for tests
that must not pass on the demo's small_cnn alone: BatchNorm buffers, LayerNorm and dropout, frozen layers."""

from __future__ import annotations

import torch
import torchvision
from torch import nn

from trainconsole.protocol import Config


def resnet18(config: Config, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """torchvision's resnet18 (20 BatchNorm layers, running statistics as buffers)."""
    return torchvision.models.resnet18(weights=None, num_classes=num_classes)


class Tokens(nn.Module):
    """(N, C, H, W) feature map -> (N, H*W, C) tokens plus a learned position embedding."""

    def __init__(self, width: int, length: int) -> None:
        super().__init__()
        self.position = nn.Parameter(torch.zeros(1, length, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(2).transpose(1, 2) + self.position


class MeanPool(nn.Module):
    """Mean over tokens."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(1)


def transformer(config: Config, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """A small ViT-like chain: patches, two encoder layers (LayerNorm, dropout), mean pool, head."""
    channels, height, width = input_shape
    patch, dim, dropout = 4, 32, 0.1
    return nn.Sequential(
        nn.Conv2d(channels, dim, patch, stride=patch),
        Tokens(dim, (height // patch) * (width // patch)),
        nn.TransformerEncoderLayer(dim, 4, 64, dropout=dropout, batch_first=True),
        nn.TransformerEncoderLayer(dim, 4, 64, dropout=dropout, batch_first=True),
        nn.LayerNorm(dim),
        MeanPool(),
        nn.Linear(dim, num_classes),
    )


def frozen(config: Config, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """A backbone whose first layers are frozen (requires_grad False) and a trainable head."""
    channels = input_shape[0]
    model = nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, num_classes),
    )
    for layer in list(model)[:4]:
        for p in layer.parameters():
            p.requires_grad = False
    return model


#: What `hoarder` keeps after its trial ends: a module-level cache, as user code does by mistake.
HOARD: list[torch.Tensor] = []


def hoarder(config: Config, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """The demo's small_cnn, built by a factory that keeps 400 MB of tensors in a module-level list (a
    Ray worker that runs the next trial still holds them)."""
    from trainconsole.trainers.builtin.models import small_cnn

    HOARD.append(torch.ones(100 << 20))  # 400 MB, touched: resident
    return small_cnn(input_shape, num_classes)
