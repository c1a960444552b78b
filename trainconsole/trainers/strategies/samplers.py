"""Per-rank samplers: DistributedSampler, with the tensor `order()` the loop's fast path uses.

Training shards are padded like DistributedSampler's (every rank gets as many batches, so the ranks' step
counts — and their collectives — line up). Evaluation shards are not padded: no sample is counted twice
in val_loss/val_acc, and evaluation's only collective is one all-reduce at the end.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

import torch
from torch.utils.data import DistributedSampler


class RankSampler(DistributedSampler):
    """Rank `rank`'s share of a dataset among `world` ranks; reshuffled per epoch from `seed + epoch`.

    The order is exactly DistributedSampler's (same permutation, same padding), computed as a tensor.
    """

    def __init__(self, dataset: Sized, world: int, rank: int, shuffle: bool, seed: int = 0,
                 pad: bool = True) -> None:
        super().__init__(dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=seed, drop_last=False)
        self.pad = pad
        if not pad:
            self.num_samples = len(range(rank, len(dataset), world))

    def order(self) -> torch.Tensor:
        """This rank's indices for the current epoch (see `set_epoch`)."""
        n = len(self.dataset)
        if self.shuffle:
            indices = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        else:
            indices = torch.arange(n)
        if self.pad and self.total_size > n:
            indices = indices.repeat(math.ceil(self.total_size / n))[: self.total_size]
        return indices[self.rank :: self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        return iter(self.order().tolist())

    def __len__(self) -> int:
        return self.num_samples
