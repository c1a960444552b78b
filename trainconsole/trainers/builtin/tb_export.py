"""`train.tensorboard = true`: the run's metrics and per-layer histograms, for TensorBoard.

A `torch.utils.tensorboard.SummaryWriter` writes into `<run dir>/tensorboard/` from global rank 0: every
`step` event's loss, learning rate and throughput, every `eval` event's validation loss and accuracy,
and, every `train.histogram_every` epochs, a histogram of each parameter (weights and biases) by layer.
It is fed the events the run already writes, so the training step itself gains no work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

SCALARS = {"step": (("loss", "train/loss"), ("lr", "train/lr"), ("samples_per_s", "train/samples_per_s")),
           "eval": (("val_loss", "val/loss"), ("val_acc", "val/acc"))}


class TensorBoardExport:
    """Turns this run's events into TensorBoard scalars and histograms (a no-op when disabled)."""

    def __init__(self, run_dir: Path | None, model: nn.Module, enabled: bool, histogram_every: int) -> None:
        self.model, self.every = model, histogram_every
        self.writer: Any = None
        if enabled and run_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # imports tensorboard: only when asked

            self.writer = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"), flush_secs=5)

    def on_event(self, kind: str, fields: dict[str, Any]) -> None:
        """Record an event the run just wrote."""
        if self.writer is None or kind not in SCALARS:
            return
        step = int(fields.get("step", 0))
        for key, tag in SCALARS[kind]:
            if isinstance(fields.get(key), (int, float)):
                self.writer.add_scalar(tag, fields[key], step)
        if kind == "eval" and int(fields.get("epoch", 0)) % self.every == 0:
            self.histograms(int(fields["epoch"]))

    def histograms(self, epoch: int) -> None:
        """One histogram per parameter tensor, tagged `weights/<layer>.<weight|bias>`, at `epoch`."""
        for name, param in self.model.named_parameters():
            self.writer.add_histogram(f"weights/{name}", param.detach().float().cpu(), epoch)

    def close(self) -> None:
        """Flush and close the event file."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
