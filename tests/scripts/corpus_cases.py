"""The corpus: genuine public training scripts, each a fixture of ours in fixtures/corpus/ that prints what
the original prints (its format strings and calls; no third-party code), with the events expected from it,
written by hand from what it prints: (kind, step, epoch, fields). Fields are the metrics as printed;
timing (`timing`), memory and the epoch total are checked apart."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

Event = tuple[str, int, "int | float | None", dict[str, float]]


@dataclass
class Case:
    """One script of the corpus: where its original lives, its fixture, arguments and expected events."""

    original: str
    script: str
    args: tuple[str, ...] = ()
    events: list[Event] = field(default_factory=list)
    timing: set[str] = field(default_factory=set)  # timing fields its step or eval events carry


def ppl(loss: float) -> float:
    """word_language_model prints `math.exp(loss)` with 2 decimals."""
    return round(math.exp(loss), 2)


def wlm_events() -> list[Event]:
    """Batches 3, 6, 9 of 10 per epoch, `valid` at each epoch's end, `test` after training."""
    out: list[Event] = []
    for epoch in (1, 2):
        for batch in (3, 6, 9):
            loss = round(7.0 - epoch / 2 - batch / 10, 2)
            fields = {"lr": 20.0, "loss": loss, "ppl": ppl(loss)}
            out.append(("step", (epoch - 1) * 10 + batch, epoch, fields))
        val = 6.5 - epoch / 2
        out.append(("eval", (epoch - 1) * 10 + 9, epoch, {"val_loss": val, "val_ppl": ppl(val)}))
    out.append(("result", 19, 2, {"test_loss": 5.75, "test_ppl": ppl(5.75)}))
    return out


def imagenet_events() -> list[Event]:
    """ProgressMeter lines at batches 1, 5, 9 of 10 (`Epoch: [e][ i/10]`), each value before its average;
    the validation's ` * Acc@1 .. Acc@5 ..` summary (the average of its 5 batches) after each epoch."""
    out: list[Event] = []
    for epoch in (0, 1):
        for i in (1, 5, 9):
            n = epoch * 10 + i
            fields = {"loss": float(f"{n / 12:.4e}"), "acc@1": round(n / 13, 2), "acc@5": round(n / 14, 2)}
            out.append(("step", epoch * 10 + i, epoch, fields))
        last = 100 * (epoch + 1) + 5
        fields = {"val_acc@1": round(last / 22, 3), "val_acc@5": round(last / 23, 3)}
        out.append(("eval", epoch * 10 + 9, epoch, fields))
    return out


CASES: dict[str, Case] = {
    "mnist": Case(
        "pytorch/examples mnist/main.py", "pytorch_mnist.py", ("--batch-size", "64"),
        # `[256/640 (40%)]` counts samples: with --batch-size 64, batch 4 of 10; epoch 2 goes on from 10
        [("step", 0, 1, {"loss": 0.2}), ("step", 4, 1, {"loss": 0.142857}),
         ("step", 8, 1, {"loss": 0.111111}), ("eval", 8, 1, {"val_loss": 0.5, "val_acc": 0.91}),
         ("step", 10, 2, {"loss": 0.1}), ("step", 14, 2, {"loss": 0.083333}),
         ("step", 18, 2, {"loss": 0.071429}),
         ("eval", 18, 2, {"val_loss": 0.25, "val_acc": 0.92})]),
    "dcgan": Case(
        "pytorch/examples dcgan/main.py", "pytorch_dcgan.py", (),
        # `[epoch/niter][i/len]`: epoch and batch; `D(G(z)): a / b` before and after G's update
        [("step", s, s // 3, {"loss_d": round(1.5 - s / 10, 4), "loss_g": round(2.0 + s / 10, 4), "d_x": 0.8,
                              "d_g_z": round(0.2 + s / 100, 4), "d_g_z_2": 0.1}) for s in range(6)]),
    "word_language_model": Case(
        "pytorch/examples word_language_model/main.py", "pytorch_word_language_model.py", (), wlm_events(),
        {"ms_per_batch", "time_s"}),
    "imagenet": Case("pytorch/examples imagenet/main.py", "pytorch_imagenet.py", (), imagenet_events(),
                     {"time", "data_time"}),
    "regression": Case("pytorch/examples regression/main.py", "pytorch_regression.py", (),
                       [("step", 343, None, {"loss": 0.000321})]),
    "reinforce": Case(
        "pytorch/examples reinforcement_learning/reinforce.py", "pytorch_reinforce.py", (),
        [("step", 10, None, {"last_reward": 18.0, "reward": 11.57}),
         ("step", 20, None, {"last_reward": 28.0, "reward": 16.53}),
         ("step", 30, None, {"last_reward": 38.0, "reward": 23.51})]),
    "cifar10_tutorial": Case(
        "pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py", "tutorial_cifar10.py", (),
        # `[2, 4]`: epoch 2, its 4th batch; an epoch of 10 is guessed from the printed counts (2 .. 10)
        [("step", (e - 1) * 10 + i, e, {"loss": round((2.3 - ((e - 1) * 10 + i - 2) / 20 + 2.3
                                                       - ((e - 1) * 10 + i - 1) / 20) / 2, 3)})
         for e in (1, 2) for i in (2, 4, 6, 8, 10)]
        + [("result", 20, 2, {"test_acc": 0.54})]),  # after `Finished Training`: a test result
    "quickstart_tutorial": Case(
        "pytorch/tutorials beginner_source/basics/quickstart_tutorial.py", "tutorial_quickstart.py", (),
        # `[  192/  320]` counts samples (no batch size among the arguments): the samples seen
        [("step", 64, 1, {"loss": 2.3}), ("step", 192, 1, {"loss": 2.1}), ("step", 320, 1, {"loss": 1.9}),
         ("eval", 320, 1, {"val_acc": 0.4, "val_loss": 1.9}),
         ("step", 384, 2, {"loss": 1.8}), ("step", 512, 2, {"loss": 1.6}), ("step", 640, 2, {"loss": 1.4}),
         ("eval", 640, 2, {"val_acc": 0.5, "val_loss": 1.8})]),
    "nanogpt": Case(
        "karpathy/nanoGPT train.py", "nanogpt.py", (),
        [("eval", 0, None, {"train_loss": 4.0, "val_loss": 4.1}), ("step", 0, None, {"loss": 4.2}),
         ("step", 2, None, {"loss": 4.0}),
         ("eval", 4, None, {"train_loss": 3.6, "val_loss": 3.7}), ("step", 4, None, {"loss": 3.8}),
         ("step", 6, None, {"loss": 3.6}),
         ("eval", 8, None, {"train_loss": 3.2, "val_loss": 3.3}), ("step", 8, None, {"loss": 3.4})],
        {"time_ms"}),
    "hf_trainer": Case(
        "huggingface/transformers Trainer (ProgressCallback.on_log)", "hf_trainer.py", (),
        [("step", 2, 0.33, {"loss": 0.5, "grad_norm": 1.25, "lr": 5e-05 * (1 - 2 / 12)}),
         ("step", 4, 0.67, {"loss": 0.25, "grad_norm": 0.625, "lr": 5e-05 * (1 - 4 / 12)}),
         ("step", 6, 1, {"loss": 1 / 6, "grad_norm": 2.5 / 6, "lr": 5e-05 * (1 - 6 / 12)}),
         ("eval", 6, 1, {"val_loss": 0.8}),
         ("step", 8, 1.33, {"loss": 0.125, "grad_norm": 0.3125, "lr": 5e-05 * (1 - 8 / 12)}),
         ("step", 10, 1.67, {"loss": 0.1, "grad_norm": 0.25, "lr": 5e-05 * (1 - 10 / 12)}),
         ("step", 12, 2, {"loss": 1 / 12, "grad_norm": 2.5 / 12, "lr": 0.0}),
         ("eval", 12, 2, {"val_loss": 0.4}),
         ("result", 12, 2, {"train_loss": 0.4567})],
        {"val_runtime", "val_samples_per_second", "val_steps_per_second", "train_runtime",
         "train_samples_per_second", "train_steps_per_second"}),
    "keras3_fit": Case(
        "keras-team/keras model.fit (ProgbarLogger, Progbar)", "keras3_fit.py", (),
        [("step", (e - 1) * 5 + c, e, {"acc": round(0.5 + ((e - 1) * 5 + c) / 100, 4),
                                       "loss": round(1 / ((e - 1) * 5 + c), 4)})
         for e in (1, 2) for c in range(1, 6)]
        + [("eval", 5, 1, {"val_acc": 0.6, "val_loss": 0.9}),
           ("eval", 10, 2, {"val_acc": 0.7, "val_loss": 0.8})],
        {"ms_per_step"}),
    "tf_keras2_fit": Case(
        "tf.keras 2 model.fit (its Progbar)", "tf_keras2_fit.py", (),
        [("step", (e - 1) * 4 + c, e, {"loss": round(1 / ((e - 1) * 4 + c), 4),
                                       "acc": round(0.5 + ((e - 1) * 4 + c) / 100, 4)})
         for e in (1, 2) for c in range(1, 5)]
        + [("eval", 4, 1, {"val_loss": 0.9, "val_acc": 0.6}),
           ("eval", 8, 2, {"val_loss": 0.8, "val_acc": 0.7})],
        {"ms_per_step"}),
}


def ordered(events: list[Event]) -> list[Event]:
    """Events by step, then kind (the order within one step is not the point)."""
    return sorted(events, key=lambda e: (e[1], e[0], sorted(e[3])))
