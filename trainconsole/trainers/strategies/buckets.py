"""Gradient averaging that overlaps backward, as DDP's reducer does, for steps that may fail on one rank.

DDP's own reducer cannot survive an out-of-memory error inside backward on one rank: the other ranks then
wait for ever in the all-reduce of a bucket the failed rank never reaches (mosaicml/composer #2117). Here
the buckets are ours: parameters are grouped in reverse order (the order backward produces gradients) into
buckets of about `BUCKET_BYTES`, and bucket k's all-reduce starts, asynchronously, as soon as its
gradients are all accumulated and buckets 0..k-1 have started, so every rank starts them in the same order
while backward goes on. A rank that fails starts every bucket it has not started yet, with zeros, so the
ranks' collectives still pair; then all ranks learn who failed and, if anyone did, discard the step.

Only the last micro-batch of a step is `arm`ed: the others accumulate locally, as under `no_sync`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _unflatten_dense_tensors

BUCKET_BYTES = 25 << 20  # DDP's default bucket_cap_mb


class GradientBuckets:
    """Averages the gradients of `params` over the ranks of `group`, bucket by bucket, during backward."""

    def __init__(self, params: list[nn.Parameter], world_size: int, group: Any = None,
                 bucket_bytes: int = BUCKET_BYTES) -> None:
        self.world_size, self.group = world_size, group
        self.buckets: list[list[nn.Parameter]] = []
        size = bucket_bytes  # start a new bucket at once
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            if size + nbytes > bucket_bytes and (not self.buckets or self.buckets[-1]):
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(p)
            size += nbytes
        self.bucket_of = {id(p): k for k, bucket in enumerate(self.buckets) for p in bucket}
        # One flat buffer per bucket, kept: a fresh one each step cost an allocation (and, on a CPU, the
        # page faults of a new mapping) per bucket per step.
        self.flats = [torch.empty(sum(p.numel() for p in b), dtype=b[0].dtype, device=b[0].device)
                      for b in self.buckets]
        self.views = [_unflatten_dense_tensors(flat, bucket) for flat, bucket in zip(self.flats, self.buckets,
                                                                                    strict=True)]
        self._reset()
        self.handles = [p.register_post_accumulate_grad_hook(self._ready) for p in params]

    def attach(self) -> None:
        """Zeroed bucket views as the parameters' `.grad`, at the start of an attempt (after
        `zero_grad(set_to_none=True)`): backward accumulates straight into the buckets, as DDP's
        `gradient_as_bucket_view` does, so no gradient is copied in or out, nor allocated."""
        with torch.no_grad():
            for flat in self.flats:
                flat.zero_()
        for bucket, views in zip(self.buckets, self.views, strict=True):
            for p, view in zip(bucket, views, strict=True):
                p.grad = view

    def arm(self) -> None:
        """The next backward is the step's last: start each bucket's all-reduce as soon as it is ready."""
        self._reset()
        self.armed = True

    def finish(self, failed: bool) -> None:
        """Start every bucket not started yet (with zeros if this rank failed: its gradients are partial)
        and wait for all of them. Every rank calls it once per attempt, failed or not.

        It counts its buckets afresh afterwards: an attempt that fails before its last micro-batch is never
        armed, and must not find the last attempt's buckets counted as started (it would post none while
        the other ranks post them all, and both would wait for ever)."""
        while self.started < len(self.buckets):
            self._start(self.started, zeros=failed)
        for work in self.works:
            work.wait()
        self._reset()

    def apply(self) -> None:
        """Put the averaged gradients into `.grad` (after `finish`, when no rank failed; `finish` has
        already counted the buckets afresh)."""
        with torch.no_grad():
            for bucket, flat, views in zip(self.buckets, self.flats, self.views, strict=True):
                flat /= self.world_size
                for p, g in zip(bucket, views, strict=True):
                    if _same(p.grad, g):
                        continue  # attached: the average is already in place
                    if p.grad is None:
                        p.grad = g.clone()
                    else:
                        p.grad.copy_(g)

    def _reset(self) -> None:
        self.armed = False
        self.ready: list[set[int]] = [set() for _ in self.buckets]
        self.started = 0
        self.works: list[Any] = []

    def _ready(self, p: nn.Parameter) -> None:
        if not self.armed:
            return
        self.ready[self.bucket_of[id(p)]].add(id(p))
        while self.started < len(self.buckets) and len(self.ready[self.started]) == len(
                self.buckets[self.started]):
            self._start(self.started, zeros=False)

    def _start(self, k: int, zeros: bool) -> None:
        flat = self.flats[k]
        with torch.no_grad():
            if zeros:
                flat.zero_()
            else:
                for p, view in zip(self.buckets[k], self.views[k], strict=True):
                    if p.grad is None:
                        view.zero_()
                    elif not _same(p.grad, view):
                        view.copy_(p.grad)
        self.works.append(dist.all_reduce(flat, group=self.group, async_op=True))
        self.started += 1


def _same(grad: torch.Tensor | None, view: torch.Tensor) -> bool:
    """Whether `grad` is the bucket's view itself (backward accumulated into it in place)."""
    return grad is not None and grad.data_ptr() == view.data_ptr() and grad.shape == view.shape
