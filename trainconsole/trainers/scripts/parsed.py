"""What one line of a script's output says, whoever read it (a structured format's reader or the guesses).

Shared by the readers in this package and by `output.OutputEvents`, which turns it into events (pure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .names import is_metric, kind


@dataclass
class Where:
    """Where in training a line was printed, as far as it says.

    `counter` of `total` is a position that may restart each epoch (a batch, a sample, a step);
    `step` is a global step the line states exactly (JSON lines); `rank` the rank that printed it.
    """

    epoch: int | float | None = None
    epochs: int | None = None
    counter: int | None = None
    total: int | None = None
    samples: bool = False  # the counter may count samples (`[640/60000 (1%)]`), not batches
    step: int | None = None
    rank: int | None = None


@dataclass
class Parsed:
    """The fields of one line: training metrics, evaluation (`val_*`), after-training results (`test_*`
    and a summary), timing, where it was printed, and which reader read it."""

    step: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    where: Where = field(default_factory=Where)
    reader: str = "guess"
    #: The step is the count of a progress bar redrawn after the line (HF Trainer's `tqdm.write`).
    step_from_bar: bool = False

    @property
    def metrics(self) -> bool:
        """Whether the line reports anything (a line of only an epoch or a time updates the place)."""
        return bool(self.step or self.eval or self.result)


def sort(fields: dict[str, Any], parsed: Parsed, evaluating: bool = False, final: bool = False) -> Parsed:
    """File named FIELDS into PARSED by their kind. On an evaluation line (EVALUATING) a plain metric is
    the evaluation's (`loss` -> `val_loss`); on a line printed after training (FINAL), a test result. A
    line whose names say their split (`loss 0.9 val_loss 0.8`) keeps each as named: its plain metric is
    the training's, whatever phase it was printed in."""
    named = any(kind(key) in ("val", "test") for key in fields)
    for key, value in fields.items():
        where = kind(key)
        if where == "timing":
            parsed.timing[key] = value
        elif where == "metric" and (evaluating or final) and key.startswith("train_"):
            parsed.eval[key] = value  # an evaluation of the training split, beside the validation's
        elif where == "metric" and (evaluating or final) and not named:
            if is_metric(key):  # `images: 54` on `Accuracy of the network on the 10000 test images: 54 %`
                target = parsed.result if final else parsed.eval
                target[("test_" if final else "val_") + key] = value
        elif where == "val" and final:
            parsed.result[key] = value
        elif where in ("metric", "val", "test"):
            {"metric": parsed.step, "val": parsed.eval, "test": parsed.result}[where][key] = value
    return parsed
