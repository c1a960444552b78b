"""One run as the console sees it, built from its events: status, latest metrics, histories, notes.

Pure: no Textual, no I/O. The tailer thread applies events here; `trainconsole.console.core.board` turns runs
into rows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from trainconsole.console.core.history import Series
from trainconsole.console.core.leaderboard import Search
from trainconsole.console.core.weights import Weights
from trainconsole.trainers.protocol import FINAL, Event, derive_status, in_queue
from trainconsole.trainers.protocol.rates import MeanRate
from trainconsole.trainers.protocol.shapes import Mem


@dataclass(frozen=True)
class Note:
    """One line of a run's log pane: a warning, a hint, a failure or a lifecycle milestone."""

    t: float
    level: str  # "info", "warning", "error"
    text: str
    hint: str = ""  # what to do about it
    detail: str = ""  # what the run said about it (an allocator's message): shown dim, as "cause:"


@dataclass
class RunState:
    """Everything the console shows about one run."""

    id: str
    name: str = ""
    kind: str = "train"
    strategy: str = ""
    epochs: int | None = None
    pid: int | None = None
    pid_started: float | None = None
    host: str | None = None  # where its process runs (run.json)
    started_at: float | None = None
    ended_at: float | None = None
    ran_s: float = 0.0  # seconds its earlier processes ran (a resumed run)
    final: str | None = None
    final_t: float = 0.0
    alive: bool | None = None
    queue_facts: dict[str, Any] = field(default_factory=dict)  # run.json's `queued` and `dequeued_at`
    said_started: bool = False  # its log has a `started` (since the last launch)
    started_t: float | None = None  # when it last said so (a resumed Slurm job waits after an old one)
    problem: str = ""
    world_size: int | None = None
    devices: Any = None
    params: int | None = None
    trainable_params: int | None = None
    step: int | None = None
    epoch: int | None = None
    loss: float | None = None
    lr: float | None = None
    samples_per_s: float | None = None  # the run's mean over its training (protocol.rates)
    rate: MeanRate = field(default_factory=MeanRate)
    val_loss: float | None = None
    val_acc: float | None = None
    best_val_acc: float | None = None
    mem: Mem | None = None
    t_first: float | None = None
    t_last: float | None = None
    events: int = 0
    train_loss: Series = field(default_factory=Series)  # the loss (or, wanting one, the first loss-like)
    metrics: dict[str, Series] = field(default_factory=dict)  # every other training metric a step carries
    loss_key: str | None = None  # the step field shown as its loss: `loss`, else the first loss-like
    plotted: str | None = None  # the metric its plot shows (m cycles; None: the loss)
    val_losses: Series = field(default_factory=Series)
    val_accs: Series = field(default_factory=Series)
    notes: deque[Note] = field(default_factory=lambda: deque(maxlen=200))
    oom_steps: list[float] = field(default_factory=list)  # marked on the plot
    weights: Weights = field(default_factory=Weights)  # the `histogram` events, for the weights view
    failure: dict[str, Any] | None = None
    # trainconsole/trainers/cost.py's figures: from the final or latest `cost` event
    cost: dict[str, Any] | None = None
    step_times: Series = field(default_factory=Series)  # step -> seconds since the first event (wall axis)
    search: Search | None = None  # a tune run's trials
    trials_summary: tuple[int, float | None] | None = None  # a search's trials and best, from the run index
    disk_full: bool = False  # its last word on the disk was `disk_full` (paused, or lost for it)
    summarized: bool = False  # made from the run index's summary: its row only, its history not read yet

    @property
    def status(self) -> str:
        """running, finished, failed, stopped, killed, lost or queued: the rule `trainconsole ls` uses."""
        started = self.said_started and (self.started_t is None or self.started_at is None
                                         or self.started_t >= self.started_at - 0.01)
        queued = in_queue(self.queue_facts, started=started)  # the protocol's one rule
        return derive_status(self.final, self.final_t, self.started_at, self.alive, queued)

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
        self.epochs = epochs if epochs is not None else self.epochs

    def apply(self, event: Event) -> None:
        """Update from one event; unknown kinds are ignored."""
        t = event.get("t")
        if isinstance(t, (int, float)):
            self.t_first = t if self.t_first is None else self.t_first
            self.t_last = t
        self.events += 1
        handler = _HANDLERS.get(event.get("type", ""))
        if handler is not None:
            handler(self, event, float(t) if isinstance(t, (int, float)) else 0.0)

    def elapsed(self, now: float) -> float | None:
        """Seconds it has run: its earlier processes' (a resumed run) and its current one's, from start to
        end (or to `now` while it runs)."""
        start = self.started_at or self.t_first
        if start is None:
            return None
        end = now if self.status == "running" else (self.final_t or self.ended_at or self.t_last or now)
        return self.ran_s + max(0.0, end - start)


def summarized(run_id: str, row: dict[str, Any], facts: dict[str, Any]) -> RunState | None:
    """An ended run's state as its index summary gives it (`trainconsole.trainers.protocol.index`): every
    fact of its
    row, none of its history (read when it is wanted). None when the summary cannot give the row the log
    would (a status the facts do not derive; a search whose summary lacks its metric or trial count: one
    made before summaries had them)."""
    last = row.get("last") or {}
    tune = row.get("kind") == "tune"
    if tune and not ("metric" in facts and isinstance(last.get("trials"), int)):
        return None
    if row.get("status") not in FINAL.values() or "t_first" not in facts:
        return None
    run = RunState(run_id, summarized=True, said_started=True, alive=False)
    run.strategy = facts.get("strategy") or ""
    run.world_size = facts.get("world_size")
    run.set_info(row, last.get("epochs"))
    run.final = row["status"] if row["status"] != "lost" else None
    run.final_t = facts.get("final_t") or 0.0
    run.t_first, run.t_last = facts.get("t_first"), facts.get("t_last")
    run.epoch, run.val_loss, run.val_acc = last.get("epoch"), last.get("val_loss"), last.get("val_acc")
    run.loss_key = "loss" if _is_num(last.get("loss")) else next(
        (k for k, v in last.items() if "loss" in k.lower() and _is_num(v) and k not in NOT_METRICS
         and not k.startswith("val_")), None)  # (an eval's)
    run.loss = last.get(run.loss_key) if run.loss_key else None
    run.samples_per_s, run.best_val_acc = last.get("samples_per_s"), facts.get("best_val_acc")
    run.disk_full = row.get("paused") == "disk full"
    if tune:  # its row: the trial count and the best trial's metric (as `index.search_result` ranks them)
        best = last.get(facts["metric"])
        run.trials_summary = (last["trials"], best if _is_num(best) else None)
        if facts["metric"] == "val_acc" and run.best_val_acc is None:
            run.best_val_acc = run.trials_summary[1]  # `b` ranks a search by its best trial
    return run if run.status == row["status"] else None


def _started(run: RunState, e: Event, t: float) -> None:
    run.final, run.failure, run.said_started, run.started_t = None, None, True, t
    if isinstance(e.get("epochs"), int):  # a script's total, from its argv
        run.epochs = e["epochs"]
    run.strategy = e.get("strategy") or run.strategy
    for key in ("world_size", "devices", "params", "trainable_params"):
        setattr(run, key, e.get(key, getattr(run, key)))
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


def _step(run: RunState, e: Event, t: float) -> None:
    for key in ("step", "epoch", "lr"):
        if e.get(key) is not None:
            setattr(run, key, e[key])
    run.rate.add(e)
    if isinstance(e.get("epochs"), int):  # a script's total, as printed (`Epoch 3/10`)
        run.epochs = e["epochs"]
    run.samples_per_s = run.rate.value
    if isinstance(e.get("mem"), dict):
        run.mem = e["mem"]
    if run.loss_key is None or run.loss_key != "loss" and _is_num(e.get("loss")):
        run.loss_key = "loss" if _is_num(e.get("loss")) else next(  # dcgan's `Loss_D`: its first loss
            (k for k, v in e.items() if "loss" in k.lower() and _is_num(v) and k not in NOT_METRICS), None)
    loss = e.get(run.loss_key or "loss")
    if _is_num(loss):
        run.loss = loss
    if _is_num(e.get("step")):
        if _is_num(loss):
            run.train_loss.append(e["step"], loss)
            run.step_times.append(e["step"], t - (run.t_first or t))
        for key, value in e.items():
            if key != run.loss_key and key not in NOT_METRICS and _is_num(value):
                run.metrics.setdefault(key, Series()).append(e["step"], value)


#: A step event's fields that are not a training metric of its own to plot (the trainer's rate and
#: learning rate included: m cycles through what a script logs beside its loss).
NOT_METRICS = frozenset({"v", "t", "run", "type", "step", "epoch", "epochs", "rank", "count", "samples",
                         "train_s", "mem", "timing", "lr", "samples_per_s"})


def _eval(run: RunState, e: Event, t: float) -> None:
    run.epoch = e.get("epoch", run.epoch)
    x = e.get("step", run.step if run.step is not None else e.get("epoch"))
    for key, series in (("val_loss", run.val_losses), ("val_acc", run.val_accs)):
        value = e.get(key)
        if _is_num(value):
            setattr(run, key, value)
            if _is_num(x):
                series.append(x, value)
    if _is_num(e.get("val_acc")) and (run.best_val_acc is None or e["val_acc"] > run.best_val_acc):
        run.best_val_acc = e["val_acc"]


def _warning(run: RunState, e: Event, t: float) -> None:
    if e.get("code") in ("disk_full", "disk_space_back"):
        run.disk_full = e["code"] == "disk_full"
    code = f"[{e['code']}] " if e.get("code") else ""
    paused = "paused: disk full; " if e.get("code") == "disk_full" else ""
    run.notes.append(Note(t, "warning", paused + code + str(e.get("message", "")), str(e.get("hint") or "")))


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
    run.final, run.final_t = FINAL[kind], t
    _cost(run, e, t)
    if kind == "failed":
        run.failure = e
        cause = e.get("cause") or "unknown cause"
        run.notes.append(Note(t, "error", f"failed: {cause}", str(e.get("hint") or "")))
    elif kind == "finished":
        if run.search is not None and e.get("best_trial"):
            run.search.best_trial = str(e["best_trial"])
        best = e.get("best_val_acc", run.best_val_acc)
        run.best_val_acc = best if _is_num(best) else run.best_val_acc
        text = "finished" + (f": best val acc {best:.4f}" if _is_num(best) else "")
        run.notes.append(Note(t, "info", text))
    else:  # a Slurm end says how, in Slurm's words (`JOB 7 ON n1 CANCELLED AT ...`)
        said = f"{kind}: {e['cause']}" if kind == "killed" and e.get("cause") else kind
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


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_HANDLERS = {
    "started": _started, "step": _step, "eval": _eval, "warning": _warning, "oom_recovered": _oom,
    "finished": _final, "failed": _final, "stopped": _final, "killed": _final, "trial": _trial,
    "histogram": _histogram, "cost": _cost, "queued": _queued,
}
