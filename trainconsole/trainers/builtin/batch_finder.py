"""`train.batch_size = "auto"`: before training, the largest per-process batch that fits.

Doubles from 1 (2 for a model with batch norm: a batch of one cannot train it where a feature map is
down to one value per channel, resnet18 at 32x32) until a training step (forward, backward, optimizer
step) runs out of memory or the batch reaches the process's share of the training set, then bisects
between the last fit and the first failure, and keeps `MARGIN` of the result (memory varies from step to
step); on a GPU also no more than leaves `HEADROOM` of the memory free by the trials' measured peaks.
One step per trial (the Lightning finder takes 3; accelerate halves a failing batch instead of searching
up).

It runs once, in a spawned child of the run's main process, before the strategy is built, on the device
the run's first process will use and under `train.max_memory_mb`: every DDP rank then gets the
same per-process batch, and the global `train.batch_size` becomes that times the world size. The result
and the trials go into the `started` event (`batch_finder`). A resumed run takes the batch its checkpoint
was trained with instead of searching again (memory use may differ now; OOM recovery covers that).
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import os
import resource
import signal
import time
from typing import Any

import psutil
import torch
import torch.nn.functional as F

from trainconsole.protocol import Config

from ..errors import TrainerError
from ..strategies.devices import resolve as resolve_devices
from ..troubles import memory_cap
from ..troubles.oom import free, is_oom
from . import data, models
from .batches import resident_bytes
from .optim import Precision, make_optimizer

MARGIN = 0.9
#: On a GPU, the share of the memory the search may use (train.max_memory_mb, else the device's) that the
#: found batch leaves free by the trials' own peaks: under a small cap a tenth of the batch is a few MB,
#: less than the run holds beyond a trial (resnet18 under 256 MiB on an H100: 112 fitted, the run ran out
#: at 100).
HEADROOM = 0.1
#: A batch leaves an epoch at least this many steps (digits without a cap picked the whole training set).
MIN_STEPS = 8
#: On a CPU without train.max_memory_mb: the share of the memory available at start the search may use.
AVAILABLE_SHARE = 0.5
#: The search stops after this long and keeps the largest batch that fitted (every path ends in < 60 s).
TIMEOUT_S = float(os.environ.get("TRAINCONSOLE_FINDER_TIMEOUT_S", "45"))


def resolve(config: Config, resume: str | None = None) -> Config:
    """`config` with `train.batch_size = "auto"` replaced by the found global batch (else unchanged);
    resuming from a checkpoint, by the batch that checkpoint's run found."""
    if config["train"]["batch_size"] != "auto":
        return config
    saved = _saved_batch(resume) if resume else None
    if saved is not None:
        resolved = copy.deepcopy(config)
        resolved["train"]["batch_size"], finder = saved
        resolved["train"]["batch_finder"] = {**finder, "trials": [], "from_checkpoint": resume}
        return resolved
    spec = config["strategy"]
    devices = resolve_devices(config) if spec["name"] in ("ddp", "dp") else None
    world = spec["nnodes"] * len(devices) if spec["name"] == "ddp" and devices else 1
    device = _device(config)
    start = time.monotonic()
    found, trials = find_apart(config, device, world)
    resolved = copy.deepcopy(config)
    resolved["train"]["batch_size"] = found * world
    resolved["train"]["batch_finder"] = {"per_process": found, "world_size": world, "device": str(device),
                                        "trials": trials, "seconds": round(time.monotonic() - start, 2)}
    return resolved


def _saved_batch(path: str) -> tuple[int, dict[str, Any]] | None:
    """(global batch, finder record) from the config a checkpoint saved; None if it holds none."""
    try:  # mmap: the config is read, the tensors are not
        saved = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("config") or {}
    except Exception:  # noqa: BLE001 - restoring the checkpoint reports what is wrong with it
        return None
    train = saved.get("train") or {}
    batch = train.get("batch_size")
    return (batch, dict(train.get("batch_finder") or {})) if isinstance(batch, int) else None


def find_apart(config: Config, device: torch.device, world: int) -> tuple[int, list[list[int]]]:
    """`find` in a fresh (spawned) process, so the run starts as if no trial had run: the trials'
    freed heap, the allocator's caches and oneDNN's primitive cache stay in that process. (In the same
    process, under a CPU cap, a run could then not create oneDNN primitives for new micro-batch sizes
    after an OOM: "could not create a primitive" all the way down to a micro-batch of 1.)

    The child reports each trial as it goes. A child that dies (the kernel's OOM killer sends SIGKILL)
    is a FinderFailed within a second; one still searching after `TIMEOUT_S` is stopped and the largest
    batch that fitted so far is taken."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, config, device, world), daemon=True)
    child.start()
    send.close()
    trials: list[list[int]] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if receive.poll(0.2):
                try:
                    message = receive.recv()
                except EOFError:
                    break
                if message[0] == "trial":
                    trials.append(message[1])
                elif message[0] == "done":
                    return message[1], trials
                else:
                    raise FinderFailed(f"the batch finder failed: {message[1]}")
            elif not child.is_alive():
                break
        else:
            fitted = [batch for batch, ok in trials if ok]
            if fitted:  # never under the smallest batch that trained (2 for batch norm)
                return max(min(fitted), int(max(fitted) * MARGIN)), trials
            raise FinderFailed(f"the batch finder found no batch that fits within {TIMEOUT_S:g} s")
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
    code = child.exitcode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    raise FinderFailed(f"the batch finder's process was {how} after {len(trials)} trials "
                       f"(signal 9 is usually the kernel's out-of-memory killer)")


class FinderFailed(TrainerError):
    """`train.batch_size = "auto"` could not find a batch; the run fails saying why."""

    hint = ("set train.batch_size to a number, or set train.max_memory_mb so the search stays inside a "
            "budget (without it, on a CPU, it is bounded by the memory available when it starts)")


def _child(send: Any, config: Config, device: torch.device, world: int) -> None:
    """The finder's process: report each trial, then the result (or the error) through `send`."""
    if os.environ.get("TRAINCONSOLE_FINDER_KILL"):  # test hook: the kernel's OOM killer at work
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        found, _ = find(config, device, world, lambda trial: send.send(("trial", trial)))
        send.send(("done", found))
    except Exception as exc:  # noqa: BLE001 - the parent turns it into one line
        send.send(("error", f"{type(exc).__name__}: {exc}"))


def find(config: Config, device: torch.device, world: int,
         report: Any = None) -> tuple[int, list[list[int]]]:
    """(per-process batch, [[batch, fits 0/1], ...]) for a training step of this config on `device`.

    At most 1/MIN_STEPS of this process's share of the training set (an epoch keeps MIN_STEPS steps at
    least). On a CPU without `train.max_memory_mb`, the search runs under a cap of most of the memory
    available now, so that running out fails a trial instead of waking the kernel's OOM killer."""
    split = data.build(config)
    limit = max(1, len(split.train) // world // MIN_STEPS)
    model, devices = _placed_model(config, models.build(config, split.num_classes, split.input_shape), device)
    optimizer = make_optimizer(model, config["train"])
    precision = Precision(config["train"]["precision"], device, lambda **_: None)
    pool = torch.stack([split.train[i][0] for i in range(min(limit, 256))])
    cap_mb = config["train"]["max_memory_mb"]
    if not cap_mb and device.type == "cpu":
        cap_mb = max(64, int(psutil.virtual_memory().available * AVAILABLE_SHARE) >> 20)
    trials: list[list[int]] = []
    peaks: dict[int, int] = {}  # on a GPU: batch -> the allocated memory's peak of a trial that fitted
    smallest = min(limit, smallest_batch(model))

    def fits(batch: int) -> bool:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        ok = _trial(model, optimizer, precision, pool, batch, device, cap_mb > 0)
        if ok and device.type == "cuda":
            peaks[batch] = torch.cuda.max_memory_allocated(device)
        trials.append([batch, int(ok)])
        if report is not None:
            report([batch, int(ok)])
        return ok

    with _capped(cap_mb, devices):
        # the datasets the run will keep on the GPU, held meanwhile (100 MB of images under a 256 MiB
        # cap: the finder's batch ran out of memory in the run)
        held = torch.empty(resident_bytes(split.train, split.val, device, cap_mb), dtype=torch.uint8,
                           device=device)
        low = search(fits, limit, smallest)
        del held
    found = max(smallest, int(low * MARGIN)) if low < limit else limit
    if peaks and low < limit:
        budget = (cap_mb << 20) if cap_mb else torch.cuda.get_device_properties(device).total_memory
        found = max(smallest, min(found, within(peaks, int(budget * (1 - HEADROOM)))))
    return found, trials


def within(peaks: dict[int, int], budget: int) -> int:
    """The largest batch whose peak, on the line through the two largest fitted trials' peaks, is within
    `budget` bytes (the largest fitted batch where the line cannot be drawn; 0 when none fitted)."""
    if not peaks:
        return 0
    sizes = sorted(peaks)
    top = sizes[-1]
    if len(sizes) < 2 or peaks[top] <= peaks[sizes[-2]]:
        return top
    per_sample = (peaks[top] - peaks[sizes[-2]]) / (top - sizes[-2])
    return max(0, min(top, top + math.floor((budget - peaks[top]) / per_sample)))


def smallest_batch(model: torch.nn.Module) -> int:
    """1, or 2 for a model with batch norm (batch statistics need two samples where a feature map is
    one value per channel: "Expected more than 1 value per channel when training")."""
    norms = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d, torch.nn.SyncBatchNorm)
    return 2 if any(isinstance(m, norms) for m in model.modules()) else 1


def search(fits: Any, limit: int, smallest: int = 1) -> int:
    """The largest batch <= `limit` for which `fits(batch)` (0 if not even `smallest`): double from
    `smallest`, then bisect."""
    low, high = 0, smallest
    while high <= limit and fits(high):
        low, high = high, high * 2
    if low == 0:
        return 0
    if high > limit:  # every doubling up to the limit fitted: try the limit itself
        if low == limit or fits(limit):
            return limit
        high = limit
    while high - low > max(1, low // 20):  # bisect to within 5 %
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def _placed_model(config: Config, model: torch.nn.Module,
                  device: torch.device) -> tuple[torch.nn.Module, list[torch.device]]:
    """The model placed as the run will place it (model_parallel: its stages on their devices)."""
    if config["strategy"]["name"] != "model_parallel":
        return model.to(device), [device]
    from ..strategies import make_strategy

    strategy = make_strategy(config)
    return strategy.setup_module(model), strategy.devices


def _trial(model: torch.nn.Module, optimizer: torch.optim.Optimizer, precision: Precision,
           pool: torch.Tensor, batch: int, device: torch.device, capped: bool) -> bool:
    """Whether one training step at `batch` runs without running out of memory."""
    failed = False
    try:
        x = pool.repeat((batch + len(pool) - 1) // len(pool), *[1] * (pool.dim() - 1))[:batch].to(device)
        optimizer.zero_grad(set_to_none=True)
        with precision.autocast():
            out = model(x)
            loss = F.cross_entropy(out, torch.zeros(batch, dtype=torch.long, device=out.device))
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    except Exception as exc:  # noqa: BLE001 - only out-of-memory means "does not fit"
        if not is_oom(exc, capped):
            raise
        failed = True
    optimizer.zero_grad(set_to_none=True)
    free(device)
    return not failed


def _device(config: Config) -> torch.device:
    """The device the run's first process trains on."""
    devices = resolve_devices(config) if config["strategy"]["name"] != "single" else None
    if devices:
        return devices[0]
    from ..strategies.single import pick_device

    return pick_device(config["strategy"]["accelerator"], config["strategy"]["devices"])


class _capped:
    """`train.max_memory_mb` for the probe, and the previous CPU limit back afterwards (the ranks and
    the run set their own)."""

    def __init__(self, cap_mb: int, devices: list[torch.device]) -> None:
        self.cap_mb, self.devices = cap_mb, devices
        self.saved = resource.getrlimit(resource.RLIMIT_DATA)

    def __enter__(self) -> None:
        memory_cap.apply_devices(self.cap_mb, self.devices)

    def __exit__(self, *exc: object) -> None:
        resource.setrlimit(resource.RLIMIT_DATA, self.saved)
        for device in memory_cap.placed(self.devices):
            if device.type == "cuda" and self.cap_mb:
                torch.cuda.set_per_process_memory_fraction(1.0, device)
