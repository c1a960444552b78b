"""Which devices a multi-device strategy uses: GPU indices from `[strategy]`, or a count of CPU slots.

`devices = 'auto'` means every visible GPU; with no GPU it means `min(2, cpu cores)` CPU slots, so that
ddp and model_parallel still run their multi-process / multi-stage code path on a CPU-only machine.
"""

from __future__ import annotations

from typing import Any

import torch

from trainconsole.protocol import Config, machine

from ..errors import StrategyUnavailable

CPU_AUTO = 2  # ddp workers / model_parallel stages for `devices = 'auto'` without a GPU


def uses_cuda(accelerator: str) -> bool:
    """True when the run goes to GPUs: `cuda`, or `auto` with a visible GPU."""
    if accelerator == "cpu":
        return False
    if not torch.cuda.is_available():
        if accelerator == "cuda":
            raise StrategyUnavailable("strategy.accelerator = 'cuda' but no CUDA device is visible")
        return False
    return True


def gpu_ids(devices: Any) -> list[int]:
    """The GPU indices `strategy.devices` names: all visible, the first N, or an explicit list."""
    count = torch.cuda.device_count()
    if devices == "auto":
        return list(range(count))
    wanted = list(range(devices)) if isinstance(devices, int) else list(devices)
    missing = [i for i in wanted if i >= count]
    if missing:
        raise StrategyUnavailable(f"strategy.devices = {devices!r} needs GPU(s) {missing}, but only {count} "
                                  "are visible; lower strategy.devices or set strategy.accelerator = 'cpu'")
    return wanted


def cpu_slots(devices: Any, oversubscribe: bool = False) -> int:
    """How many CPU workers/stages `strategy.devices` asks for (a list counts its entries), at most one per
    core of this machine unless `oversubscribe`: a clear refusal, not a machine swamped by processes.
    (Validation refuses the same on the machine it runs on; this holds where a config skipped it.)"""
    cores = machine.cpu_count()
    if devices == "auto":
        return max(1, min(CPU_AUTO, cores))
    slots = devices if isinstance(devices, int) else len(devices)
    if slots > cores and not oversubscribe:
        raise StrategyUnavailable(f"strategy.devices = {devices!r} asks for {slots} CPU workers, but this "
                                  f"machine has {cores} CPU cores and no GPU in use; lower strategy.devices "
                                  "(or set strategy.oversubscribe = true)")
    return slots


def resolve(config: Config) -> list[torch.device]:
    """The devices of this run, one per worker/stage: `cuda:i` for each GPU, else `cpu` repeated."""
    strategy = config["strategy"]
    if uses_cuda(strategy["accelerator"]):
        ids = gpu_ids(strategy["devices"])
        if not ids:
            raise StrategyUnavailable("strategy.devices selects no GPU")
        return [torch.device("cuda", i) for i in ids]
    return [torch.device("cpu")] * cpu_slots(strategy["devices"], strategy.get("oversubscribe", False))
