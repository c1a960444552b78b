"""Every printed pair under the name the script gave it (issue 43), read from lines as real programs print
them: `name value` pairs beside `name: value`, a name that says its split kept in any phase, tables under a
header row (skorch's history with its ANSI colours, bordered tables, units), a logger's prefix, tqdm's
percentage (pure: the readers alone)."""

from __future__ import annotations

import pytest

from trainconsole.trainers.scripts.formats import read
from trainconsole.trainers.scripts.tables import Tables

SKORCH = [  # skorch's PrintLog: the header and its rule with the first row, improved values coloured
    "  epoch    train_loss    valid_acc    valid_loss    cp     dur",
    "-------  ------------  -----------  ------------  ----  ------",
    "      1        \x1b[36m0.6905\x1b[0m       \x1b[32m0.5100\x1b[0m        \x1b[35m0.6876\x1b[0m"
    "     +  0.0302",
    "      2        0.6863       0.5000        0.6836        0.0130",
]


@pytest.mark.parametrize("evaluating", [False, True], ids=["training", "evaluating"])
def test_name_value_pairs_each_under_its_own_name(evaluating: bool) -> None:
    parsed = read("epoch 1 loss 0.9600 val_loss 0.7900 val_acc 0.8000", evaluating=evaluating)
    assert (parsed.step, parsed.where.epoch) == ({"loss": 0.96}, 1)
    assert parsed.eval == {"val_loss": 0.79, "val_acc": 0.8}
    assert read("epoch 1 loss 0.50 val_acc 0.85").eval == {"val_acc": 0.85}
    assert read("epoch 3 psnr 23.10 loss_G 1.20").step == {"psnr": 23.1, "loss_g": 1.2}


def test_a_sentence_and_a_split_read_once_are_no_pairs() -> None:
    assert read("Accuracy of the network on the 10000 test images: 54 %").eval == {"val_acc": 0.54}
    nanogpt = read("step 0: train loss 4.0000, val loss 4.1000")  # `loss 4.0000` is the train split's only
    assert (nanogpt.step, nanogpt.eval) == ({}, {"train_loss": 4.0, "val_loss": 4.1})


def test_a_table_under_its_header_row() -> None:
    tables = Tables()
    rows = [read(tables.named(line)) for line in SKORCH]
    assert not any(r.metrics for r in rows[:2])
    assert [(r.where.epoch, r.step, r.eval, r.timing) for r in rows[2:]] == [
        (1, {"loss": 0.6905}, {"val_acc": 0.51, "val_loss": 0.6876}, {"time_s": 0.0302}),
        (2, {"loss": 0.6863}, {"val_acc": 0.5, "val_loss": 0.6836}, {"time_s": 0.013})]


def test_a_bordered_table_with_units() -> None:
    tables = Tables()
    lines = ["| Epoch | Train Loss | Val Acc (%) | Time (s) |",
             "|-------+------------+-------------+----------|",
             "|     1 |     0.5123 |       87.5% |     1.20 |"]
    row = read([tables.named(line) for line in lines][-1])
    assert (row.where.epoch, row.step, row.eval, row.timing) == (1, {"loss": 0.5123}, {"val_acc": 0.875},
                                                                 {"time_s": 1.2})


def test_lines_with_values_are_no_header() -> None:
    tables = Tables()
    line = "Epoch: [0][ 11/160]  Time  0.512 ( 0.600)  Loss 1.18e+01 (1.06e+01)"
    assert tables.named(line) == line and tables.header is None
    assert tables.named("1   0.5") == "1   0.5"  # numbers without a header: as printed


def test_a_tqdm_percentage_is_progress_and_a_logger_prefix_no_name() -> None:
    bar = read("Validation round:  43%|####3     | 9/21 [00:00<00:00, 120.1it/s]", evaluating=True)
    assert not bar.metrics and bar.timing == {"it_per_s": 120.1}
    training = read("Epoch 1/5:  50%|#####     | 5/10 [00:01<00:01, loss (batch)=0.693]")
    assert training.step == {"loss_batch": 0.693}
    for line in ("INFO: Validation Dice score: 0.85", "INFO:root:Validation Dice score: 0.85",
                 "2024-01-01 10:00:00,123 - INFO - Validation Dice score: 0.85"):
        assert read(line).eval == {"val_dice_score": 0.85}
