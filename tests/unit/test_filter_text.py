"""A filter reads a run's config from its details' JSON text only where the text may name the key, and
decodes each distinct text once: what every key names is what the whole decoded config says."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trainconsole.console.filters import ROW_KEYS, _comparable, parse, values_of
from trainconsole.protocol.index import Summary

NAMES = st.sampled_from(["lr", "train.lr", "epochs", "val_acc", "best.val_acc", "last.loss", "x", "é",
                         "name", "a.b.c", "c", "config", "best", "shape"])
SCALARS = st.one_of(st.floats(allow_nan=True), st.integers(-5, 5), st.booleans(),
                    st.text(st.sampled_from('ab": ,{}.\\é'), max_size=8))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2),
                   st.lists(st.dictionaries(NAMES, SCALARS, max_size=2), max_size=2))
KEYS = st.one_of(NAMES, st.builds(lambda a, b: f"{a}.{b}", st.sampled_from(["train", "model", "x.y"]), NAMES))


def whole(summary: Summary, key: str) -> list[float | str]:
    """`values_of` as it was: the whole config decoded for every key."""
    row = summary.row
    section, _, name = key.partition(".")
    if key in ROW_KEYS:
        found = [row.get(key)]
    elif key in summary.config:
        found = [summary.config[key]]
    elif name and section in ("best", "last"):
        found = [(summary.best if section == "best" else row.get("last") or {}).get(name)]
    else:
        found = [v for k, v in summary.config.items() if k.rpartition(".")[2] == key]
        found = found or [(row.get("last") or {}).get(key)]
    return [_comparable(v) for v in found if v is not None and not isinstance(v, (list, dict))]


def same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b, strict=True))


@settings(max_examples=300, deadline=None)
@given(config=st.dictionaries(KEYS, VALUES, max_size=6), last=st.dictionaries(NAMES, SCALARS, max_size=3),
       best=st.dictionaries(NAMES, SCALARS, max_size=2), key=KEYS)
def test_a_key_names_what_the_whole_config_says(config: dict, last: dict, best: dict, key: str) -> None:
    row = {"id": "r1", "name": "n", "status": "finished", "last": last}
    summary = Summary.of("r1", "k", row, best, config)
    assert same(values_of(summary, key), whole(Summary.of("r1", "k", row, best, config), key))


def test_a_filter_on_runs_of_one_config_reads_each_their_own_figures() -> None:
    config = {"train.lr": 0.05, "train.epochs": 3}
    runs = [Summary.of(f"r{i}", "k", {"id": f"r{i}", "last": {"val_acc": i / 10}}, {"val_acc": i / 10},
                       {**config, "train.lr": 0.05 if i % 2 else 0.5}) for i in range(10)]
    wanted = parse("val_acc>0.5 lr<0.1")
    assert [s.id for s in runs if wanted.matches(s)] == ["r7", "r9"]
    assert math.isnan(values_of(Summary.of("r", "k", {}, {}, {"x": math.nan}), "x")[0])
