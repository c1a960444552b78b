"""The errors a run raises on purpose (stdlib only): `str()` is already the user-facing cause, and an
error that knows its own fix carries it as `hint`."""

from __future__ import annotations


class TrainerError(Exception):
    """Base class of the errors the trainer raises on purpose; `str()` is already user-facing."""


class NonFiniteLossError(TrainerError):
    """The training loss was NaN or infinite when it was last read (at a `step` event)."""

    def __init__(self, step: int, value: float) -> None:
        self.step, self.value = step, value
        super().__init__(f"training loss is {value} at step {step}")


class CheckpointError(TrainerError):
    """A checkpoint or weights file that is missing, damaged, or not safe to load."""


class DataFilesMissing(TrainerError, FileNotFoundError):
    """A local dataset's files are not where `data.root` says (downloads are disabled)."""


class StrategyUnavailable(TrainerError):
    """The configured strategy or accelerator cannot run here."""


class ClusterTooSmall(TrainerError):
    """A Ray cluster cannot hold the ranks of a ddp run, or not on as many nodes as it asks."""

    hint = ("add nodes (or free their resources), lower strategy.devices or strategy.nnodes, or let the run "
            "go on with fewer ranks (strategy.min_workers)")


class ShapeError(TrainerError):
    """The data's samples do not have the shape the model takes; `hint` names both."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint
