"""A long run's history kept beside its log (`history.json`): the plot and every view from it equal the
replay's, and a cut, garbled or stale file, or a crash while writing one, never shows a false figure: the
log is read instead."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pytest
from history_paths import differences, replayed, views
from hypothesis import given, settings
from hypothesis import strategies as st

from trainconsole.console.core import snapshot
from trainconsole.console.core.history import Series
from trainconsole.console.services import run_history
from trainconsole.console.services.tracked_run import TrackedRun
from trainconsole.protocol import RunDir, read_all

T0 = 1_700_000_000.0


def points(seed: int, n: int, back: int) -> list[tuple[float, float]]:
    """`n` points of a noisy falling loss with spikes and ties; `back` times, steps replayed from earlier."""
    rng, out, x = random.Random(seed), [], 0.0
    for i in range(n):
        if back and rng.random() < back / n:
            x = max(0.0, x - rng.randint(1, 3000))
        x += rng.choice((1.0, 1.0, 2.0, 0.5))
        y = round(2.0 / (1 + i / 500) + rng.random() * 0.1, 2) if rng.random() > 0.001 else 50.0
        out.append((x, y))
    return out


def series(pts: list[tuple[float, float]]) -> Series:
    s = Series()
    for x, y in pts:
        s.append(x, y)
    return s


def decimations(s: Series) -> list:
    return [s.decimate(b) for b in (1, 20, 57, 123, 500, 2000)] + [len(s), s.last]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.sampled_from([100, 8001, 9000, 40_000, 70_000]),
       back=st.sampled_from([0, 0, 3]), more=st.sampled_from([0, 1, 300, 5000]))
def test_a_kept_series_decimates_as_the_whole_one_and_grows_alike(seed: int, n: int, back: int,
                                                                  more: int) -> None:
    pts = points(seed, n + more, back)
    whole, kept = series(pts[:n]), snapshot.decode_series(json.loads(json.dumps(
        snapshot.encode_series(series(pts[:n])))))
    assert decimations(kept) == decimations(whole)
    cut = snapshot.encode_series(whole).get("cut", -math.inf)
    for x, y in pts[n:]:
        if x <= cut:  # (the reader replays the log for these: `tracked_run._goes_back`)
            return
        whole.append(x, y)
        kept.append(x, y)
    assert decimations(kept) == decimations(whole)


def test_a_long_series_keeps_a_small_part_of_its_points() -> None:
    kept = snapshot.encode_series(series(points(1, 500_000, 0)))
    assert kept["level"] == 1 and len(kept["pts"]) < 4000 and len(kept["xs"]) < 256


# --- whole states, over made-up logs with every kind of event the views show ---

num = st.one_of(st.floats(0.0, 10.0, allow_nan=False), st.integers(0, 9), st.just(math.nan))
step = st.fixed_dictionaries({"type": st.just("step"), "step": st.integers(0, 400)}, optional={
    "epoch": st.integers(0, 9), "loss": num, "acc": num, "lr": num, "samples_per_s": num,
    "count": st.integers(1, 20), "source": st.sampled_from(["probe", "text"]),
    "mem": st.fixed_dictionaries({"rss": st.integers(0, 10**9)})})
other = st.one_of(
    st.fixed_dictionaries({"type": st.just("started"), "strategy": st.sampled_from(["single", "ddp"])},
                          optional={"params": st.integers(1, 10**6), "resumed_from_step": st.integers(1, 9)}),
    st.fixed_dictionaries({"type": st.just("eval")}, optional={
        "epoch": st.integers(0, 9), "step": st.integers(0, 400), "val_loss": num, "val_acc": num}),
    st.fixed_dictionaries({"type": st.just("warning"), "message": st.just("m"),
                           "code": st.sampled_from(["disk_full", "nan_loss"]), "hint": st.just("h")}),
    st.fixed_dictionaries({"type": st.just("oom_recovered"), "step": st.integers(0, 400)}),
    st.fixed_dictionaries({"type": st.just("histogram"), "epoch": st.integers(0, 5), "layers": st.just(
        {"fc.weight": {"min": -1.0, "max": 1.0, "counts": [1, 4, 2]}})}),
    st.fixed_dictionaries({"type": st.just("cost"), "cost": st.just({"cpu_s": 1.5, "energy_j": None})}),
    st.fixed_dictionaries({"type": st.sampled_from(["finished", "failed", "stopped", "killed"])},
                          optional={"best_val_acc": num, "cause": st.just("x"), "hint": st.just("y")}))


@settings(max_examples=40, deadline=None)
@given(log=st.lists(st.one_of(step, step, step, other), max_size=300), seed=st.integers(0, 99))
def test_any_log_shows_the_same_through_a_kept_history_and_through_its_replay(log: list, seed: int) -> None:
    rng = random.Random(seed)
    for i, event in enumerate(log):  # (steps mostly go forward, as a run's do)
        if event["type"] == "step" and rng.random() < 0.9:
            event["step"] = i
    events = [{"v": 1, "t": T0 + i, "run": "r", **e} for i, e in enumerate(log)]
    assert differences(events) == []


def test_the_suites_own_kind_of_log_shows_the_same(tmp_path: Path) -> None:
    """A trainer's log as the built-in trainer writes it (steps with mem, evals, histograms, a finish)."""
    events = [{"v": 1, "t": T0, "run": "r", "type": "started", "strategy": "single", "devices": ["cpu"]}]
    for s in range(1, 3001):
        events.append({"v": 1, "t": T0 + s / 10, "run": "r", "type": "step", "step": s,
                       "epoch": 1 + s // 1000, "loss": 1 / s, "lr": 0.1, "samples_per_s": 100.0 + s % 7,
                       "count": 10, "mem": {"devices": [], "rss": 10}})
        if s % 1000 == 0:
            events.append({"v": 1, "t": T0 + s / 10, "run": "r", "type": "eval", "epoch": s // 1000,
                           "step": s, "val_loss": 0.3, "val_acc": 0.9 + s / 1e5})
    events.append({"v": 1, "t": T0 + 400, "run": "r", "type": "finished", "best_val_acc": 0.93})
    assert differences(events) == []


# --- the file beside the log: the console's reader takes it, or reads the log ---

def write_log(path: Path, steps: int, start: int = 1, mode: str = "w") -> RunDir:
    run = RunDir(path)
    run.path.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "started", "strategy": "single"}] if start == 1 else []
    lines += [{"type": "step", "step": s, "epoch": 1 + s // 100, "loss": 1 / s + (s % 13) / 100,
               "samples_per_s": 50.0} for s in range(start, start + steps)]
    lines += [{"type": "eval", "step": s, "epoch": s // 100, "val_acc": 0.5 + s / 1e5}
              for s in range(start, start + steps) if s % 100 == 0]
    lines.sort(key=lambda e: e.get("step", 0))
    with open(run.events, mode) as f:
        f.writelines(json.dumps({"v": 1, "t": T0 + e.get("step", 0), "run": path.name, **e}) + "\n"
                     for e in lines)
    return run


def read(run: RunDir) -> tuple[TrackedRun, object]:
    """What the console's reader makes of the run: its first read, then its history read in the
    background (as the tailer does), to the end."""
    t = TrackedRun(run)
    update, _ = t.first_read()
    state = update.state
    while t.backfill is not None:
        update, _ = t.backfill_step(1 << 20)
        state = update.state if update is not None else state
    return t, state


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Histories from 16 KiB logs on, keeping only what plots up to 8 columns wide read."""
    monkeypatch.setattr(run_history, "FROM_BYTES", 16 << 10)
    monkeypatch.setattr(snapshot, "RAW_MAX", 32)


def shows(state: object) -> str:
    return views(state, (1, 3, 8))


def test_a_second_reader_takes_the_history_and_shows_what_the_replay_shows(tmp_path: Path,
                                                                           small: None) -> None:
    run = write_log(tmp_path / "r", 2000)
    t, first = read(run)
    assert os.path.exists(run_history.path(run))  # the first reader kept it
    t, second = read(run)
    assert t.cut > 0 and len(second.train_loss) == 2000  # from the history: no background reading
    assert shows(second) == shows(first) == shows(replayed(run.id, read_all(run.events)))


def test_a_log_grown_since_is_read_from_the_historys_offset(tmp_path: Path, small: None) -> None:
    run = write_log(tmp_path / "r", 2000)
    read(run)
    write_log(tmp_path / "r", 300, start=2000 + 1, mode="a")
    t, state = read(run)
    assert t.cut > 0 and shows(state) == shows(replayed(run.id, read_all(run.events)))
    # and the live reading goes on from there
    write_log(tmp_path / "r", 50, start=2301, mode="a")
    update, _ = t.read_new()
    for event in update.events:
        state.apply(event)
    assert shows(state) == shows(replayed(run.id, read_all(run.events)))


def test_a_resumed_run_replaying_steps_the_history_left_out_is_replayed_whole(tmp_path: Path,
                                                                             small: None) -> None:
    run = write_log(tmp_path / "r", 2000)
    read(run)
    t, state = read(run)
    write_log(tmp_path / "r", 400, start=1500, mode="a")  # back to a checkpoint at step 1500
    update, _ = t.read_new()
    assert update is not None and update.state is not None and t.backfill is not None  # read afresh
    t, state = read(run)
    assert shows(state) == shows(replayed(run.id, read_all(run.events)))


def garble(raw: bytes) -> bytes:
    """One digit of the last kept loss changed: still JSON, a false figure if it were taken."""
    i = raw.rindex(b'"ys":[') + 7
    return raw[:i] + (b"7" if raw[i:i + 1] != b"7" else b"3") + raw[i + 1:]


@pytest.mark.parametrize("harm", ["cut", "garbled", "empty", "other_log", "shorter_log", "rewritten_log",
                                  "other_version", "tmp_left"])
def test_a_harmed_history_is_ignored_and_the_log_shows_the_truth(tmp_path: Path, small: None,
                                                                 harm: str) -> None:
    run = write_log(tmp_path / "r", 2000)
    read(run)
    path, rng = run_history.path(run), random.Random(harm)
    raw = Path(path).read_bytes()
    if harm == "cut":  # a crash while writing it (without the rename, as a file system may leave it)
        Path(path).write_bytes(raw[:rng.randrange(len(raw))])
    elif harm == "garbled":
        Path(path).write_bytes(garble(raw))
    elif harm == "empty":
        Path(path).write_bytes(b"")
    elif harm == "other_log":  # the run's log replaced by another of the same length
        write_log(tmp_path / "r", 2000)
        data = run.events.read_bytes()
        run.events.write_bytes(data.replace(b'"loss": 0.', b'"loss": 1.'))
    elif harm == "shorter_log":
        write_log(tmp_path / "r", 1000)
    elif harm == "rewritten_log":  # the same size, different lines before the offset
        data = bytearray(run.events.read_bytes())
        i = len(data) - 200
        data[i:i + 1] = b"9" if data[i:i + 1] != b"9" else b"8"
        run.events.write_bytes(bytes(data))
    elif harm == "other_version":
        first, _, body = raw.partition(b"\n")
        header = json.loads(first)
        header["v"] = 99
        Path(path).write_bytes(json.dumps(header).encode() + b"\n" + body)
    elif harm == "tmp_left":  # a crash between the write and the rename: the old history stays
        Path(f"{path}.1234.tmp").write_bytes(raw[:100])
    truth = shows(replayed(run.id, read_all(run.events)))
    t = TrackedRun(run)
    t.first_read()
    assert (t.cut > 0) == (harm == "tmp_left")  # only a whole history of this log is taken
    t, state = read(TrackedRun(run).run)
    assert shows(state) == truth


def test_a_history_is_written_whole_or_not_at_all(tmp_path: Path, small: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash while writing (here: the disk refuses mid-write) leaves the old history or none."""
    run = write_log(tmp_path / "r", 2000)
    read(run)
    before = Path(run_history.path(run)).read_bytes()
    state = replayed(run.id, read_all(run.events))

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    assert not run_history.write(run, state, run.events.stat().st_size)
    assert Path(run_history.path(run)).read_bytes() == before
    assert [p.name for p in run.path.iterdir()] == ["events.jsonl", "history.json"]


@pytest.mark.parametrize("at", [{"step": 550}, {}])
def test_an_eval_placed_among_the_points_left_out_has_the_log_replayed(tmp_path: Path, small: None,
                                                                       at: dict) -> None:
    """The compare view's wall axis places an eval by the step times around it: those the history left
    out are read from the log (an eval without a step lands at the run's last step: one without a loss,
    written after the history, here)."""
    run = write_log(tmp_path / "r", 2000)
    read(run)
    with open(run.events, "a") as f:
        if not at:
            f.write(json.dumps({"v": 1, "t": T0 + 3000, "run": "r", "type": "step", "step": 2001}) + "\n")
        f.write(json.dumps({"v": 1, "t": T0 + 3000, "run": "r", "type": "eval", **at, "val_acc": 0.7}) + "\n")
    t, state = read(run)
    assert shows(state) == shows(replayed(run.id, read_all(run.events)))


def test_a_history_kept_from_a_history_shows_the_same(tmp_path: Path, small: None) -> None:
    """The log grew by more than a history's worth: the reader keeps a new one from the state it took
    (with its points left out), and the next reader shows what the replay shows."""
    run = write_log(tmp_path / "r", 2000)
    read(run)
    before = Path(run_history.path(run)).read_bytes()
    write_log(tmp_path / "r", 600, start=2001, mode="a")
    read(run)
    assert Path(run_history.path(run)).read_bytes() != before  # kept again, at the new end
    t, state = read(run)
    assert t.cut > 0 and shows(state) == shows(replayed(run.id, read_all(run.events)))


@pytest.mark.parametrize("back", [False, True])
def test_a_history_far_behind_its_log_is_read_on_from_its_offset(tmp_path: Path, small: None,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                back: bool) -> None:
    """More than TAIL_MAX since the history: the row from the log's tail first, then the history and the
    log from its offset on in the background (or, should that go back before what it kept whole, the
    whole log)."""
    from trainconsole.console.services import tracked_run

    monkeypatch.setattr(tracked_run, "TAIL", 1 << 10)
    monkeypatch.setattr(tracked_run, "TAIL_MAX", 8 << 10)
    run = write_log(tmp_path / "r", 2000)
    read(run)
    write_log(tmp_path / "r", 600, start=1500 if back else 2001, mode="a")
    t = TrackedRun(run)
    update, _ = t.first_read()
    assert t.backfill is not None and (t.backfill.offset > 0) and len(update.state.train_loss) < 600
    t, state = read(run)
    assert shows(state) == shows(replayed(run.id, read_all(run.events)))


def test_a_state_kept_by_a_version_of_other_shapes_is_not_read() -> None:
    data = snapshot.encode(replayed("r", [{"v": 1, "t": T0, "run": "r", "type": "started"}]))
    assert data is not None and snapshot.decode("r", data).said_started
    data["fields"] = [*data["fields"], "a_field_of_a_later_version"]
    with pytest.raises(ValueError):
        snapshot.decode("r", data)


@pytest.mark.parametrize("n", [9000, 70_001])
def test_a_kept_series_takes_a_step_replayed_among_its_last_points_as_the_whole_one(n: int) -> None:
    """A resumed run replaying steps after what a history left out: `Series.truncate` finds the min and
    max of a block again among its points, kept or not (`snapshot._fill`)."""
    for seed in range(6):
        pts = points(seed, n, 0)
        kept = snapshot.encode_series(series(pts))
        for k in {min(kept["p0"] + 1, n - 1), min(kept["p0"] + 3, n - 1), n - 1}:
            whole, back = series(pts), snapshot.decode_series(json.loads(json.dumps(kept)))
            for s in (whole, back):
                s.append(pts[k][0], 0.77)  # (back to point k: the points from k on are replaced)
                s.append(pts[k][0] + 0.5, 0.5)
            assert decimations(back) == decimations(whole), (seed, k)


def test_a_history_holding_nan_is_read_back_whole(tmp_path: Path, small: None) -> None:
    run = write_log(tmp_path / "run-nan", 2000)
    with open(run.events, "a") as f:  # a diverged run: its last loss NaN (what orjson does not parse)
        f.write(json.dumps({"v": 1, "t": T0, "run": "run-nan", "type": "step", "step": 2000, "epoch": 21,
                            "loss": math.nan}) + "\n")  # (json writes it `NaN`)
    _, replayed_state = read(run)  # (keeps the history)
    assert b"NaN" in open(run_history.path(run), "rb").read()
    kept = run_history.read(run, run.events.stat().st_size)
    assert kept is not None and math.isnan(kept.state.loss)
    assert shows(kept.state) == shows(replayed_state)
