"""The filter language of `ls --filter` and the runs table: each bound straddled, every error one line."""

from __future__ import annotations

import pytest

from trainconsole.console.filters import FilterError, parse
from trainconsole.protocol.index import Summary


def summary(run_id: str, status: str = "finished", val_acc: float | None = 0.95, lr: float = 0.05,
            tags: tuple[str, ...] = (), note: str = "", strategy: str = "single") -> Summary:
    last = {"epoch": 3, "loss": 0.2, "lr": lr * 0.1} | ({} if val_acc is None else {"val_acc": val_acc})
    row = {"id": run_id, "name": "small_cnn-digits", "kind": "train", "strategy": strategy, "status": status,
           "host": "box1", "tags": list(tags), "note": note, "last": last}
    config = {"train.lr": lr, "train.epochs": 5, "model.name": "small_cnn", "data.name": "digits",
              "strategy.name": strategy}
    return Summary.of(run_id, "", row, {"val_acc": 0.97}, config)


def kept(expr: str, runs: list[Summary]) -> list[str]:
    wanted = parse(expr)
    return [s.id for s in runs if wanted.matches(s)]


def test_the_issue_filter_straddles_each_bound() -> None:
    runs = [
        summary("in", val_acc=0.95, lr=0.05),
        summary("acc-just-above", val_acc=0.9001, lr=0.0999),
        summary("acc-on-bound", val_acc=0.9, lr=0.05),
        summary("acc-below", val_acc=0.89, lr=0.05),
        summary("lr-on-bound", val_acc=0.95, lr=0.1),
        summary("lr-above", val_acc=0.95, lr=0.2),
        summary("failed", status="failed", val_acc=0.95, lr=0.05),
        summary("killed", status="killed", val_acc=0.95, lr=0.05),
        summary("no-acc", val_acc=None, lr=0.05),
    ]
    assert kept("status:finished val_acc>0.9 lr<0.1", runs) == ["in", "acc-just-above"]
    assert kept("status:finished val_acc>=0.9 lr<=0.1", runs) == ["in", "acc-just-above", "acc-on-bound",
                                                                   "lr-on-bound"]
    assert kept("status:failed,killed", runs) == ["failed", "killed"]


def test_keys_resolve_to_run_fields_config_and_results() -> None:
    runs = [summary("a", strategy="ddp", tags=("baseline",)), summary("b", note="Why: a bigger LR")]
    assert kept("strategy=ddp", runs) == ["a"]
    assert kept("strategy!=ddp", runs) == ["b"]
    assert kept("train.epochs>4", runs) == ["a", "b"] and kept("epochs>10", runs) == []
    assert kept("best.val_acc>0.96", runs) == ["a", "b"]
    assert kept("last.lr<0.01", runs) == ["a", "b"] and kept("lr<0.01", runs) == []  # bare lr: the config's
    assert kept("model.name=SMALL_CNN", runs) == ["a", "b"]
    assert kept("nonexistent>1", runs) == [] and kept("nonexistent!=1", runs) == []


def test_words_tags_and_negation() -> None:
    runs = [summary("20250101-a-1234", tags=("baseline", "old")),
            summary("20250102-b-abcd", note="bigger LR"), summary("20250103-c-ffff", tags=("sweep",))]
    assert kept("baseline", runs) == ["20250101-a-1234"]
    assert kept("lr", runs) == ["20250102-b-abcd"]  # the note, case-insensitive
    assert kept("abcd", runs) == ["20250102-b-abcd"]  # the id
    assert kept("tag:sweep,old", runs) == ["20250101-a-1234", "20250103-c-ffff"]
    assert kept("-tag:old", runs) == ["20250102-b-abcd", "20250103-c-ffff"]
    assert kept("'bigger lr'", runs) == ["20250102-b-abcd"]
    assert kept("", runs) == [r.id for r in runs]
    assert kept("host:box1 kind:train", runs) == [r.id for r in runs]
    assert kept("host:box2", runs) == []


@pytest.mark.parametrize(("expr", "named"), [
    ("status:done", "'status:done'"),
    ("kind:notebook", "'kind:notebook'"),
    ("colour:red", "'colour:red'"),
    ("tag:", "'tag:'"),
    ("lr<", "'lr<'"),
    ("val_acc>high", "'val_acc>high'"),
    (">0.9", "'>0.9'"),
    ("name:'unclosed", "No closing quotation"),
])
def test_a_bad_filter_is_one_line_naming_the_term(expr: str, named: str) -> None:
    with pytest.raises(FilterError) as caught:
        parse(expr)
    message = str(caught.value)
    assert named in message and "\n" not in message and message.startswith("filter: ")
