"""`strategy.devices` against what this machine has (stdlib; the facts come from `machine`, NVML read lazily).

CPU workers or stages: at most one per core unless `strategy.oversubscribe = true`. GPUs: only indices
visible here, and no more than are visible. A list of GPU indices on a machine without a GPU is refused;
`devices = "auto"` always fits (no GPU: CPU workers). The CLI checks against the machine it launches on;
the run process checks again on the machine it trains on.
"""

from __future__ import annotations

from typing import Any

from . import machine
from .config_error import ConfigError

KEY = "strategy.devices"
COUNT_INSTEAD = 'give "auto" or a count of CPU workers, e.g. 2'


def check_devices(strategy: dict[str, Any]) -> None:
    """Refuse a `strategy.devices` (or `accelerator = "cuda"`) this machine cannot give."""
    devices, accelerator = strategy["devices"], strategy["accelerator"]
    if accelerator == "cuda" and not machine.gpu_count():
        raise ConfigError("strategy.accelerator", 'is "cuda", but no GPU is visible on this machine; '
                          'use "auto" or "cpu"')
    if isinstance(devices, list):
        _check_gpu_list(devices, accelerator)
    elif isinstance(devices, int) and devices > 1:  # "auto" and 1 fit every machine: no NVML read for them
        _check_count(devices, accelerator, strategy["oversubscribe"])


def _check_gpu_list(indices: list[int], accelerator: str) -> None:
    """Every listed GPU must exist here, and a list means GPUs: not with `accelerator = "cpu"`."""
    if accelerator == "cpu":
        raise ConfigError(KEY, f'lists GPU indices, but strategy.accelerator = "cpu": {COUNT_INSTEAD}',
                          indices)
    gpus = machine.gpu_count()
    if not gpus:
        raise ConfigError(KEY, f"lists GPU indices, but no GPU is visible on this machine: {COUNT_INSTEAD}",
                          indices)
    missing = [i for i in indices if i >= gpus]
    if missing:
        raise ConfigError(KEY, f"names GPU {missing[0]}, but this machine has {_gpus(gpus)}", indices)


def _check_count(count: int, accelerator: str, oversubscribe: bool) -> None:
    """A count of GPUs where GPUs are in use, else of CPU workers (at most the cores, unless told)."""
    gpus = 0 if accelerator == "cpu" else machine.gpu_count()
    if gpus and count > gpus:
        raise ConfigError(KEY, f"must be <= {gpus}, the GPUs visible here (or strategy.accelerator = "
                          '"cpu" for CPU workers)', count)
    cores = machine.cpu_count()
    if not gpus and count > cores and not oversubscribe:
        raise ConfigError(KEY, f"must be <= {cores}, {machine.CPUS.what} (no GPU in use); or set "
                          "strategy.oversubscribe = true to run more CPU workers than cores", count)


def _gpus(count: int) -> str:
    """`1 visible GPU (index 0)`, `4 visible GPUs (indices 0 to 3)`."""
    if count == 1:
        return "1 visible GPU (index 0)"
    return f"{count} visible GPUs (indices 0 to {count - 1})"
