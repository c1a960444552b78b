"""Named shapes of event fields that several modules write or read (stdlib only).

`Mem` is the `mem` field of `step` events: written by the trainers' meter
(trainconsole/trainers/builtin/meter.py),
completed
with every rank's figures by DDP's rank sync (trainconsole/trainers/strategies/rank_sync.py) and sampled for
a script's process tree (trainconsole/trainers/lifecycle/memory.py); read by the console's devices pane and
the leak watch.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class DeviceMem(TypedDict):
    """One GPU's memory in bytes, as torch's caching allocator (or NVML, for scripts) counts it."""

    device: str  # "cuda:0"
    allocated: int
    reserved: int
    peak: int  # the most allocated since the process started (or the script's sampling began)
    rank: NotRequired[int]  # ddp: the rank using it
    node: NotRequired[int]


class RankMem(TypedDict):
    """One DDP rank's memory (bytes), read at its last meeting with the other ranks."""

    rank: int
    node: int
    device: str  # "cuda:N" or "cpu"
    rss: int  # host resident set size of the rank's process
    allocated: NotRequired[int]  # on a GPU only
    reserved: NotRequired[int]
    peak: NotRequired[int]


class Mem(TypedDict):
    """The `mem` field of a `step` event."""

    devices: list[DeviceMem]  # empty on CPU
    rss: int  # host resident set size of the writing process (a script: its whole process tree)
    ranks: NotRequired[list[RankMem]]  # ddp: every rank
