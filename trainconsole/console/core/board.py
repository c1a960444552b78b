"""The console's pure core: the board of runs, their table rows and ranking, and what a frame shows of
them (`View`, `plot_view`, `weights_view`; the plot's lines themselves are `core.plot`'s).

No Textual and no I/O here, so all of it is unit-tested directly. The app owns the `Board`: it takes the
reader thread's `RunUpdate`s into it, and reads rows and plot lines from it at a few frames per second.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any as Object

from trainconsole.console.core import columns, leaderboard
from trainconsole.console.core.columns import FIGURE_WIDTHS
from trainconsole.console.core.figures import count, figure, fraction
from trainconsole.console.core.plot import RUN_COLORS, PlotLine, next_metric, plot_lines, plotted, trial_lines
from trainconsole.console.core.run_state import Event, Note, RunState, label
from trainconsole.console.core.run_update import RunUpdate
from trainconsole.console.core.weights import Snapshot
from trainconsole.protocol.run_row import paused_for, status_label
from trainconsole.protocol.slurm_config import as_squeue

#: (The plot's names too: imported from here before `core.plot` was its own.)
__all__ = ["RUN_COLORS", "Board", "PlotLine", "View", "build_view", "label", "next_metric", "plot_lines",
           "plot_view", "plotted", "rank", "row", "trial_lines", "weights_view"]
RANKINGS = ("newest", "best")
SHORT_STRATEGY = {"model_parallel": "mp"}


class Board:
    """Every run the console knows, and which of them changed since the screen last looked."""

    def __init__(self) -> None:
        self.runs: dict[str, RunState] = {}
        self._dirty: set[str] = set()
        self._cells: dict[str, tuple[tuple[bool, bool], tuple[str, ...]]] = {}  # run id -> (how, its cells)
        self._order: tuple[str, int, list[RunState]] | None = None  # the ranking, run count and order

    def cells(self, run: RunState, now: float, marked: bool, with_host: bool) -> tuple[str, ...]:
        """A run's row cells (COLUMNS, and its host if `with_host`), kept until it changes (`forget_rows`):
        a frame of 10,000 runs formats only the rows of those that changed."""
        how = (marked, with_host)
        kept = self._cells.get(run.id)
        if kept is not None and kept[0] == how:
            return kept[1]
        cells = row(run, now, marked) + ((run.host or "-",) if with_host else ())
        self._cells[run.id] = (how, cells)
        return cells

    def ranked(self, by: str, changed: set[str]) -> list[RunState]:
        """The runs in table order (`rank`), sorted again only when a run changed or the ranking did."""
        if self._order is None or changed - {"*"} or self._order[:2] != (by, len(self.runs)):
            self._order = (by, len(self.runs), rank(self.runs.values(), by))
        return self._order[2]

    def forget_rows(self, changed: set[str]) -> None:
        """Drop the kept cells of these runs (they changed)."""
        for run_id in changed:
            self._cells.pop(run_id, None)

    def get(self, run_id: str) -> RunState:
        """The run with this id, created empty on first sight."""
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = RunState(run_id)
            self._dirty.add(run_id)
        return run

    def apply(self, run_id: str, events: Iterable[Event]) -> int:
        """Apply a batch of one run's events; return how many there were."""
        n = self.get(run_id).apply_all(events)
        if n:
            self._dirty.add(run_id)
        return n

    def take(self, update: RunUpdate) -> None:
        """Apply what the reader learnt about one run: its state, new events, then its current facts."""
        if update.gone:
            self.forget(update.run_id)
            return
        if update.state is not None:
            self.runs[update.run_id] = update.state
        run = self.get(update.run_id)
        self.apply(update.run_id, update.events)
        if update.info is not None:
            run.set_info(update.info, update.epochs)
        run.alive, run.problem, run.slurm_reason = update.alive, update.problem, update.slurm_reason
        run.notes.extend(update.notes)
        self._dirty.add(update.run_id)

    def touch(self, run_id: str) -> None:
        """Note that a run changed other than by events (its run.json, liveness or a problem)."""
        self._dirty.add(run_id)

    def forget(self, run_id: str) -> None:
        """Drop a run whose directory is gone."""
        if self.runs.pop(run_id, None) is not None:
            self._dirty.add(run_id)

    def take_dirty(self) -> set[str]:
        """The ids changed since the last call (then forgets them)."""
        dirty, self._dirty = self._dirty, set()
        return dirty


def rank(runs: Iterable[RunState], by: str = "newest") -> list[RunState]:
    """Runs in table order: newest first, or best validation accuracy first (runs without one last)."""
    if by == "best":
        return sorted(runs, key=lambda r: (r.best_val_acc is None, -(r.best_val_acc or 0.0), r.id))
    return sorted(runs, key=lambda r: (r.started_at or r.t_first or 0.0, r.id), reverse=True)


def row(run: RunState, now: float, marked: bool = False) -> tuple[str, ...]:
    """One run's cells, in COLUMNS order."""
    strategy = SHORT_STRATEGY.get(run.strategy, run.strategy) or "-"
    strategy = "tune" if run.kind == "tune" else strategy
    if run.world_size and run.world_size > 1:
        strategy += f"×{run.world_size}"
    epoch = "-" if run.epoch is None else fraction(run.epoch, run.epochs or None, FIGURE_WIDTHS["epoch"])
    searched = columns.trials(run)  # a search: its trial count, and its best metric so far as its acc
    epoch = epoch if searched is None else f"{searched} tr"
    acc = _num(columns.acc(run), "acc", ".3f" if searched is None else ".3g")
    elapsed = run.elapsed(now)
    return (
        ("● " if marked else "! " if run.problem else "") + label(run), status_text(run), strategy, epoch,
        _num(run.loss, "loss"), acc,
        "-" if run.samples_per_s is None else count(run.samples_per_s, FIGURE_WIDTHS["rate"]),
        "-" if elapsed is None else duration(elapsed),
    )


def status_text(run: RunState) -> str:
    """The status cell: `paused: disk full` / `lost: disk full` for a run stuck on a full disk,
    `queued: Resources` for a Slurm job waiting (Slurm's reason)."""
    status = run.status
    paused = paused_for(status, run.disk_full)
    if paused:
        return status_label(status, paused)
    if status == "queued" and run.slurm_reason:  # Slurm's own word on why its job waits
        return f"queued: {run.slurm_reason}"
    return status


def _num(value: float | None, column: str, fmt: str = ".4g") -> str:
    """A number for a column: `fmt` where it fits, fewer digits where not (`figure`)."""
    return "-" if value is None else figure(value, FIGURE_WIDTHS[column], fmt)


def duration(seconds: float) -> str:
    """42s, 3m05s, 1h02m, 4d07h (past 99 hours: `123h04m` no longer fits its column)."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 100 * 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def human_bytes(n: float) -> str:
    """Bytes in GiB/MiB/KiB, three significant figures."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{int(n)}B"


Row = tuple[str, tuple[str, ...]]  # a table row: its key (a run or trial id) and its cells


@dataclass(frozen=True)
class LogView:
    """The log pane's content: the selected run's notes under its failure, if it failed."""

    title: str
    notes: list[Note]
    failure: dict[str, Object] | None
    t0: float | None  # the run's first event: notes are stamped relative to it


@dataclass(frozen=True)
class MemView:
    """The selected run's own memory figures (from its latest `step` event) for the devices pane."""

    label: str
    mem: dict[str, Object] | None


@dataclass(frozen=True)
class TrialsView:
    """A tune run's leaderboard: its trials' rows, best first, and the metric they are ranked by."""

    rows: list[Row]
    metric: str
    ended: list[tuple[dict[str, Object], float]] = field(default_factory=list)  # for the importance


@dataclass
class View:
    """What the screen needs for one frame, copied out of the board."""

    rows: list[Row]
    labels: dict[str, str]
    selected: str | None
    hosts: list[str] = field(default_factory=list)  # the hosts the runs run on (rows gain a host cell if >1)
    plot_changed: bool = False  # a plotted run changed: draw the plot (in its own, slower frame)
    log: LogView | None = None
    mem: MemView | None = None
    trials: TrialsView | None = None  # a tune run's


def build_view(board: Board, now: float, selected: str | None, marked: Iterable[str], ranking: str,
               changed: set[str]) -> View:
    """Rows for every run; log and memory of the selected run if it changed (`changed` holds run ids,
    or "*" for everything); and whether any plotted run changed."""
    marks = {m for m in marked if m in board.runs}
    board.forget_rows(changed)
    ordered = board.ranked(ranking, changed)
    hosts = sorted({r.host for r in ordered if r.host})
    with_host = len(hosts) > 1  # one host (or none known): the column would only repeat it
    rows = [(r.id, board.cells(r, now, r.id in marks, with_host)) for r in ordered]
    if selected not in board.runs:
        selected = ordered[0].id if ordered else None
    view = View(rows, {r.id: label(r) for r in ordered}, selected, hosts=hosts)
    view.plot_changed = "*" in changed or bool(changed.intersection(marks | {selected}))
    if selected and (selected in changed or "*" in changed):
        run = board.runs[selected]
        notes = list(run.notes)
        if run.status == "lost":
            notes.append(Note(run.t_last or now, "error", "lost: the process is gone without a final event",
                              "see stderr.log in the run directory; r resumes from the last checkpoint"))
        if run.status == "queued":  # what holds the nodes its Slurm job waits for (squeue's, the reader's)
            live = run.slurm_job.get("live") if isinstance(run.slurm_job.get("live"), dict) else {}
            notes += [Note(now, "info", f"its nodes held by {line}") for line in live.get("waits_for") or []]
        job = slurm_job(run.slurm_job, live=run.status in ("queued", "running"))
        view.log = LogView(f"log: {label(run)} ({run.status}){job}", notes, run.failure, run.t_first)
        view.mem = MemView(label(run), run.mem)
        if run.search is not None:
            view.trials = TrialsView(leaderboard.rows(run.search), run.search.metric,
                                     leaderboard.ended(run.search))
    return view


def slurm_job(job: dict[str, Object], live: bool = True) -> str:
    """The log pane's words for a run's Slurm job (run.json `slurm`, with what squeue says now under `live`,
    which the reader adds): ` · Slurm job 7, debug, n[1-2], limit 10:00, 9:12 left` ("" for a run not sent
    to Slurm); squeue's view only while the run waits or runs (`live`)."""
    if not job.get("job_id"):
        return ""
    now = job.get("live") if isinstance(job.get("live"), dict) and live else {}
    parts = [f"Slurm job {job['job_id']}", str(now.get("partition") or job.get("partition") or ""),
             str(now.get("nodes") or job.get("nodes") or ""),
             f"limit {as_squeue(str(job['time']))}" if job.get("time") else "",
             f"{now['time_left']} left" if now.get("time_left") else ""]
    return " · " + ", ".join(p for p in parts if p)


def plot_view(board: Board, selected: str | None, marked: Iterable[str], buckets: int) -> tuple[
        list[PlotLine], str]:
    """The plot's lines (the selected run first, then the marked ones that are not searches) and its
    title."""
    tune = board.runs.get(selected or "")
    if tune is not None and tune.search is not None:
        return trial_lines(tune.search, buckets), f"{tune.search.metric} per trial: {label(tune)}"
    shown = [i for i in dict.fromkeys([selected, *marked]) if i in board.runs]
    runs = [board.runs[i] for i in shown if i == selected or board.runs[i].kind != "tune"]  # (a search
    # has no loss of its own: marked, it is only acted on)
    extra = f" +{len(runs) - 1} more" if len(runs) > 1 else ""
    return plot_lines(runs, buckets), (f"{plotted(runs[0])}: {label(runs[0])}{extra}" if runs else "loss")


def weights_view(board: Board, selected: str | None, layer: str | None, move: int = 0) -> tuple[
        list[Snapshot], str, str | None]:
    """The selected run's histograms of `layer` (its first layer if it has no such one), moved `move`
    layers on (wrapping): (snapshots, title, the layer shown)."""
    run = board.runs.get(selected or "")
    names = run.weights.names if run is not None else []
    if not names:
        return [], f"weights: {label(run)}" if run else "weights", layer
    index = (names.index(layer) if layer in names else 0) + move
    layer = names[index % len(names)]
    return run.weights.layers[layer], f"weights: {layer} ({index % len(names) + 1}/{len(names)})", layer
