"""One run as the console sees it, built from its events: status, latest metrics, histories, notes.

Pure: no Textual, no I/O. The tailer thread applies events here; `trainconsole.console.core.board` turns runs
into rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from trainconsole.console.core.history import Series
from trainconsole.console.core.leaderboard import Search
from trainconsole.console.core.weights import Weights
from trainconsole.protocol import FINAL, Event, derive_status, in_queue
from trainconsole.protocol.events import SOURCE_PROBE, SOURCE_TEXT
from trainconsole.protocol.run_row import NOT_METRICS, RunRow, is_num
from trainconsole.protocol.shapes import Mem
from trainconsole.protocol.status import started_since

__all__ = ["NOT_METRICS", "PLACE_FINALS", "Event", "Note", "RunState", "label", "summarized"]

#: The key under which the reader adds to run.json's facts what the run's place makes of each final event
#: while it still has a say (`Place.final_status`, as `run_status` asks it: Slurm's own TERM is no stop).
PLACE_FINALS = "place_finals"


@dataclass(frozen=True)
class Note:
    """One line of a run's log pane: a warning, a hint, a failure or a lifecycle milestone."""

    t: float
    level: str  # "info", "warning", "error"
    text: str
    hint: str = ""  # what to do about it
    detail: str = ""  # what the run said about it (an allocator's message): shown dim, as "cause:"


@dataclass
class RunState(RunRow):
    """Everything the console shows about one run: its row's facts (`RunRow`, the fold the run index
    uses too), run.json's, and its histories and notes."""

    kind: str = "train"
    pid: int | None = None
    pid_started: float | None = None
    host: str | None = None  # where its process runs (run.json)
    started_at: float | None = None
    ended_at: float | None = None
    ran_s: float = 0.0  # seconds its earlier processes ran (a resumed run)
    name: str = ""
    alive: bool | None = None
    queue_facts: dict[str, Any] = field(default_factory=dict)  # run.json's `queued` and `dequeued_at`
    slurm_reason: str = ""  # why its Slurm job waits (`Resources`, `Priority`...), while it does
    slurm_job: dict[str, Any] = field(default_factory=dict)  # its Slurm job as run.json has it (`slurm`)
    place_finals: dict[str, str] = field(default_factory=dict)  # final events its place reads otherwise
    problem: str = ""
    mem: Mem | None = None
    train_loss: Series = field(default_factory=Series)  # the loss (or, wanting one, the first loss-like)
    metrics: dict[str, Series] = field(default_factory=dict)  # every other training metric a step carries
    plotted: str | None = None  # the metric its plot shows (m cycles; None: the loss)
    val_losses: Series = field(default_factory=Series)
    val_accs: Series = field(default_factory=Series)
    notes: deque[Note] = field(default_factory=lambda: deque(maxlen=200))
    sources: set[str] = field(default_factory=set)  # where a script run's figures came from, noted once each
    oom_steps: list[float] = field(default_factory=list)  # marked on the plot
    weights: Weights = field(default_factory=Weights)  # the `histogram` events, for the weights view
    failure: dict[str, Any] | None = None
    # trainconsole/trainers/builtin/cost.py's figures: from the final or latest `cost` event
    cost: dict[str, Any] | None = None
    step_times: Series = field(default_factory=Series)  # step -> seconds since the first event (wall axis)
    search: Search | None = None  # a tune run's trials
    trials_summary: tuple[int, float | None] | None = None  # a search's trials and best, from the run index
    summarized: bool = False  # made from the run index's summary: its row only, its history not read yet

    @property
    def status(self) -> str:
        """running, finished, failed, stopped, killed, lost or queued: the rule `trainconsole ls` uses."""
        started = self.said_started and started_since(self.started_t, self.started_at)
        queued = in_queue(self.queue_facts, started=started)  # the protocol's one rule
        final = self.place_finals.get(self.final, self.final) if self.final else None  # Place.final_status
        return derive_status(final, self.final_t, self.started_at, self.alive, queued)

    def set_info(self, info: dict[str, Any], epochs: int | None = None) -> None:
        """Take the fields of run.json (and the configured epochs)."""
        self.name = info.get("name") or self.name
        self.kind = info.get("kind") or self.kind
        self.strategy = info.get("strategy") or self.strategy
        self.pid = info.get("pid", self.pid)
        self.host = info.get("host", self.host)
        self.pid_started = info.get("pid_started", self.pid_started)
        self.started_at = info.get("started_at", self.started_at)
        self.ended_at = info.get("ended_at", self.ended_at)
        self.ran_s = float(info.get("ran_s") or 0.0)
        self.queue_facts = {k: info.get(k) for k in ("queued", "dequeued_at")}
        self.slurm_job = info.get("slurm") if isinstance(info.get("slurm"), dict) else self.slurm_job
        self.place_finals = info.get(PLACE_FINALS) or {}  # (the reader asks the place: tailer.py)
        self.epochs = epochs if epochs is not None else self.epochs

    def apply(self, event: Event) -> None:
        """Update from one event: its row's facts, then its histories and notes; unknown kinds are ignored."""
        RunRow.apply(self, event)
        handler = _HANDLERS.get(event.get("type", ""))
        if handler is not None:
            handler(self, event, _time(event))

    def apply_all(self, events: Iterable[Event]) -> int:
        """`apply` each event in turn; returns how many. A live read's steps (hundreds a run) put their
        points into the histories a batch at a time (`Series.extend`, ~3x cheaper than a point at a time),
        each history's before any other event is applied."""
        points: dict[Series, tuple[list[float], list[float]]] = {}

        def add(series: Series, x: float, y: float) -> None:
            got = points.get(series)
            if got is None:
                got = points[series] = ([], [])
            got[0].append(x)
            got[1].append(y)

        n = 0
        for event in events:
            n += 1
            RunRow.apply(self, event)
            kind = event.get("type", "")
            if kind == "step":
                _step(self, event, _time(event), add)
                continue
            handler = _HANDLERS.get(kind)
            if handler is not None:
                _extend(points)
                handler(self, event, _time(event))
        _extend(points)
        return n

    def elapsed(self, now: float) -> float | None:
        """Seconds it has run: its earlier processes' (a resumed run) and its current one's, from start to
        end (or to `now` while it runs)."""
        start = self.started_at or self.t_first
        if start is None:
            return None
        end = now if self.status == "running" else (self.final_t or self.ended_at or self.t_last or now)
        return self.ran_s + max(0.0, end - start)


def label(run: RunState) -> str:
    """A short name for a run: its name and the random end of its id."""
    suffix = run.id.rsplit("-", 1)[-1]
    return f"{run.name}·{suffix}" if run.name and suffix != run.id else run.id


def summarized(run_id: str, row: dict[str, Any], facts: dict[str, Any]) -> RunState | None:
    """An ended run's state as its index summary gives it (`trainconsole.protocol.index`): its
    row's facts (folded from its log by `RunRow`, as the console folds it) and run.json's, none of its
    history (read when it is wanted). None when the summary cannot give the row the log would (a status
    the facts do not derive; a search whose summary lacks its metric or trial count)."""
    last = row.get("last") or {}
    tune = row.get("kind") == "tune"
    if not RunRow.has_facts(facts) or row.get("status") not in FINAL.values():
        return None
    if tune and not (facts["metric"] and isinstance(last.get("trials"), int)):
        return None
    run = RunState(run_id, summarized=True, alive=False)
    run.take_facts(facts)
    run.set_info({**row, "ran_s": facts.get("ran_s")}, last.get("epochs"))  # (epochs: as the live row)
    if tune:  # its row: the trial count and the best trial's metric (as `index.search_result` ranks them)
        best = last.get(run.metric or "val_acc")
        run.trials_summary = (last["trials"], best if _is_num(best) else None)
        if run.metric == "val_acc" and run.best_val_acc is None:
            run.best_val_acc = run.trials_summary[1]  # `b` ranks a search by its best trial
    return run if run.status == row["status"] else None


def _started(run: RunState, e: Event, t: float) -> None:
    run.failure = None
    if e.get("metric") and e.get("mode") in ("max", "min"):  # a tune run names what it optimises
        run.search = run.search or Search()
        run.search.metric, run.search.mode = str(e["metric"]), e["mode"]
    resumed = e.get("resumed_from_step")
    text = f"started: {run.strategy or '?'} on {_devices(e.get('devices'))}"
    if e.get("search"):  # a tune run: its trials run on Ray's workers
        text = (f"started: {e['search']} search of {e.get('num_samples', '?')} trials, "
                f"{e.get('max_concurrent', '?')} at a time, on Ray {e.get('ray_address', 'local')}")
    if run.params is not None:
        frozen = run.params - (run.trainable_params or run.params)
        text += f", {run.params:,} params" + (f" ({frozen:,} frozen)" if frozen else "")
    if resumed:
        text = f"resumed from step {resumed}; " + text
    run.notes.append(Note(t, "info", text))


def _devices(devices: Any) -> str:
    if isinstance(devices, list):
        return ", ".join(map(str, devices)) or "?"
    return str(devices) if devices is not None else "?"


#: The log pane's note the first time a script run's figures come from a source: which numbers are exact.
SOURCE_NOTES = {
    SOURCE_PROBE: "figures measured in the script's process (exact): step, epoch, loss, lr, samples, memory",
    SOURCE_TEXT: "metrics read from the script's printed lines, at the step the probe stamped them",
}


def _source(run: RunState, e: Event, t: float) -> None:
    """Say once, per source, where a script run's figures come from (`logs` shows each event's)."""
    source = e.get("source")
    if source in SOURCE_NOTES and source not in run.sources:
        run.sources.add(source)
        run.notes.append(Note(t, "info", SOURCE_NOTES[source]))


def _time(event: Event) -> float:
    t = event.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0


def _extend(points: dict[Series, tuple[list[float], list[float]]]) -> None:
    """Put the points `apply_all` gathered into their histories (and forget them)."""
    for series, (xs, ys) in points.items():
        series.extend(xs, ys)
    points.clear()


def _step(run: RunState, e: Event, t: float,
          add: Callable[[Series, float, float], object] = Series.append) -> None:
    _source(run, e, t)
    if isinstance(e.get("mem"), dict):
        run.mem = e["mem"]
    loss = e.get(run.loss_key or "loss")  # (`RunRow` has taken the step's loss)
    step = e.get("step")
    if _is_num(step):
        if _is_num(loss):
            add(run.train_loss, step, loss)
            add(run.step_times, step, t - (run.t_first or t))
        others = e.keys() - NOT_METRICS  # (a set's difference, in C: most steps carry no metric but the loss)
        others.discard(run.loss_key)
        for key, value in e.items() if others else ():  # (in the step's order: `m` cycles in it)
            if key in others and _is_num(value):
                series = run.metrics.get(key)
                if series is None:
                    series = run.metrics[key] = Series()
                add(series, step, value)



def _eval(run: RunState, e: Event, t: float) -> None:
    _source(run, e, t)
    x = e.get("step", run.step if run.step is not None else e.get("epoch"))
    for key, series in (("val_loss", run.val_losses), ("val_acc", run.val_accs)):
        if _is_num(e.get(key)) and _is_num(x):
            series.append(x, e[key])


def _warning(run: RunState, e: Event, t: float) -> None:
    code = f"[{e['code']}] " if e.get("code") else ""
    paused = "paused: disk full; " if e.get("code") == "disk_full" else ""
    measured = " (measured in the script's process)" if e.get("source") == SOURCE_PROBE else ""
    run.notes.append(Note(t, "warning", paused + code + str(e.get("message", "")) + measured,
                          str(e.get("hint") or "")))


def _oom(run: RunState, e: Event, t: float) -> None:
    if _is_num(e.get("step")):
        run.oom_steps.append(e["step"])
    if "micro_batch" not in e:  # an older or foreign writer: show what it said
        detail = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("v", "t", "run", "type"))
        run.notes.append(Note(t, "warning", f"out of memory, recovered ({detail})" if detail else
                              "out of memory, recovered"))
        return
    ranks = f", ranks {e['failed_ranks']}" if e.get("failed_ranks") else ""
    where = f"{e.get('phase', '?')} on {e.get('device', '?')}{ranks}"
    text = (f"out of memory at step {e.get('step')} ({where}): micro-batch {e['micro_batch']} "
            f"x {e.get('accumulate', '?')} keeps batch {e.get('batch_size', '?')}")
    run.notes.append(Note(t, "warning", text, detail=str(e.get("cause") or "")))


def _final(run: RunState, e: Event, t: float) -> None:
    kind = e["type"]
    _cost(run, e, t)
    if kind == "failed":
        run.failure = e
        cause = e.get("cause") or "unknown cause"
        run.notes.append(Note(t, "error", f"failed: {cause}", str(e.get("hint") or "")))
    elif kind == "finished":
        if run.search is not None and e.get("best_trial"):
            run.search.best_trial = str(e["best_trial"])
        best = e.get("best_val_acc", run.best_val_acc)
        text = "finished" + (f": best val acc {best:.4f}" if _is_num(best) else "")
        run.notes.append(Note(t, "info", text))
    else:  # a Slurm end says how, in Slurm's words (`JOB 7 ON n1 CANCELLED AT ...`); a stuck search why
        said = f"{kind}: {e['cause']}" if kind in ("killed", "stopped") and e.get("cause") else kind
        run.notes.append(Note(t, "warning" if kind == "killed" else "info", said))
    if run.search is not None and kind != "finished":  # its trials under way ended with it
        run.search.ended_with(FINAL[kind])


def _queued(run: RunState, e: Event, t: float) -> None:
    if e.get("slurm_job"):  # submitted to Slurm (the queue waiter's own wait adds no line)
        run.notes.append(Note(t, "info", f"queued: Slurm job {e['slurm_job']}, partition "
                              f"{e.get('partition')}, {e.get('nodes')} node(s)"))


def _cost(run: RunState, e: Event, t: float) -> None:
    if isinstance(e.get("cost"), dict):
        run.cost = e["cost"]


def _trial(run: RunState, e: Event, t: float) -> None:
    run.search = run.search or Search()
    run.search.apply(e)
    leader = run.search.leader()
    if run.search.metric == "val_acc" and leader is not None:  # `b` ranks a search by its best trial
        run.best_val_acc = leader.best
    if e.get("status") == "error" and e.get("cause"):
        number = e.get("number") or e.get("trial_id")
        run.notes.append(Note(t, "error", f"trial #{number} failed: {e['cause']}"))


def _histogram(run: RunState, e: Event, t: float) -> None:
    run.weights.apply(e)


_is_num = is_num


_HANDLERS = {
    "started": _started, "step": _step, "eval": _eval, "warning": _warning, "oom_recovered": _oom,
    "finished": _final, "failed": _final, "stopped": _final, "killed": _final, "trial": _trial,
    "histogram": _histogram, "cost": _cost, "queued": _queued,
}
