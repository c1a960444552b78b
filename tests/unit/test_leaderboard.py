"""The leaderboard's pure core: trials from `trial` events, ranked live by the tune metric."""

from __future__ import annotations

from typing import Any

from trainconsole.console.core.leaderboard import Search, rows, searched, status_text
from trainconsole.console.core.run_state import RunState


def trial(tid: str, number: int, status: str, iteration: int, acc: float | None = None, **extra: Any) -> dict:
    metrics = {} if acc is None else {"val_acc": acc, "val_loss": 1 - acc}
    return {"type": "trial", "t": 1.0, "trial_id": tid, "number": number, "status": status,
            "iteration": iteration, "config": {"lr": 0.0123456, "bs": 64}, "metrics": metrics, **extra}


def test_trials_rank_by_their_best_value_and_the_leader_is_marked() -> None:
    search = Search("val_acc", "max")
    for event in (trial("a", 1, "running", 1, 0.50), trial("b", 2, "running", 1, 0.70),
                  trial("a", 1, "running", 2, 0.90), trial("a", 1, "running", 3, 0.80),
                  trial("c", 3, "pending", 0)):
        search.apply(event)
    assert [t.id for t in search.ranked()] == ["a", "b", "c"]
    table = rows(search)
    assert table[0] == ("a", ("★", "#1", "running", "3", "0.9", "-", "-", "lr=0.0123 bs=64"))
    assert [cells[0] for _, cells in table] == ["★", "", ""]
    assert table[2][1][4] == "-"  # no metric yet


def test_min_mode_ranks_the_lowest_first() -> None:
    search = Search("val_loss", "min")
    search.apply(trial("a", 1, "running", 1, 0.5))  # val_loss 0.5
    search.apply(trial("b", 2, "running", 1, 0.9))  # val_loss ~0.1
    assert [t.id for t in search.ranked()] == ["b", "a"]


def test_an_early_stopped_trial_shows_where_it_was_cut_and_an_error_its_cause() -> None:
    search = Search()
    search.apply(trial("a", 1, "stopped_early", 2, 0.4))
    search.apply(trial("b", 2, "error", 1, None, cause="label 12 >= model.num_classes 10"))
    assert status_text(search.trials["a"]) == "cut@2"
    assert dict(rows(search))["b"][-1] == "label 12 >= model.num_classes 10"
    assert dict(rows(search))["b"][2] == "error"


def test_the_search_verdict_overrides_the_live_leader() -> None:
    search = Search()
    search.apply(trial("a", 1, "terminated", 2, 0.9))
    search.apply(trial("b", 2, "terminated", 2, 0.8))
    search.best_trial = "b"
    assert search.leader().id == "b"


def test_a_tune_run_state_learns_metric_trials_and_failures() -> None:
    run = RunState("t")
    run.apply({"type": "started", "t": 1.0, "metric": "val_loss", "mode": "min"})
    run.apply(trial("a", 1, "running", 1, 0.6))
    run.apply(trial("b", 2, "error", 1, None, cause="boom"))
    run.apply({"type": "finished", "t": 2.0, "best_trial": "a"})
    assert run.search is not None and run.search.metric == "val_loss" and run.search.leader().id == "a"
    assert any("trial #2 failed: boom" in note.text for note in run.notes)
    assert len(run.search.trials["a"].curve) == 1


def test_searched_values_are_compact() -> None:
    assert searched({"lr": 0.000123456, "optimizer": "adam"}) == "lr=0.000123 opt=adam"
    assert searched({"train.batch_size": 64}) == "bs=64"


def test_a_trial_cut_by_asha_gets_a_cut_mark_at_its_last_point_and_others_none() -> None:
    from trainconsole.console.core.board import trial_lines

    search = Search()
    for n, status, accs in ((1, "terminated", (0.5, 0.7, 0.9)), (2, "stopped_early", (0.3,))):
        for it, acc in enumerate(accs, start=1):
            search.apply({"type": "trial", "trial_id": f"t{n}", "number": n, "status": "running",
                          "iteration": it, "metrics": {"val_acc": acc}})
        search.apply({"type": "trial", "trial_id": f"t{n}", "number": n, "status": status,
                      "iteration": len(accs), "metrics": {"val_acc": accs[-1]}})
    lines = trial_lines(search, 50)
    kinds = [(line.label, line.kind) for line in lines]
    assert kinds == [("#1", "val_acc"), ("#2", "val_acc"), ("#2", "cut")]
    assert (lines[-1].xs, lines[-1].ys) == ([1.0], [0.3])
