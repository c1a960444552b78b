"""Reattach: a fresh console over one finished run with a huge event log, on a 120x40 pty.

Three times per log size, from just before `exec` of the console: its first frame, the runs table right
(a frame on screen whose row shows `finished` and the last epoch: `row_s`), and the whole history plotted
(the first plot drawn after a state with every step in it was taken: `plot_s`); and both again from the
moment the dashboard opened (the reader starts then: `row_after_dashboard_s`, `plot_after_dashboard_s`),
with, for this tree, the dashboard's own first paint (`painted_after_dashboard_s`: no row shows before it)
and the whole history's hand-over to the app (`history_after_dashboard_s`). Each size is measured with
orjson and with the stdlib json parser (`--parsers`), alternately, `--repeat` times; medians are printed,
with the console process's CPU seconds (all threads) at each point: on a shared, busy machine they move
much less than the wall times.

With `--base DIR` (a checkout of the commit before issue 47's history: `git worktree add /tmp/base47r
0b9ac78`), each repeat runs, in turn: the base's console (it replays the log), this tree's console on a run
without a `history.json` (it replays the log and keeps its history: `fresh`), and this tree's again with
the history that one kept (`kept`), and prints the ratios kept / base. It also times, in this process,
keeping the history (`history_write_s`, what the first console pays once) and reading it back.

    .venv/bin/python benchmarks/console_reattach.py --events 500000 --repeat 3 --parsers orjson \
        --base /tmp/base47r
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from console_common import Console, machine

from trainconsole.protocol import RunDir, defaults, dumps

RUN = "20240101-000000-small_cnn-digits-big1"
PER_EPOCH = 1000


def make_log(home: Path, events: int) -> None:
    """A finished run: `started`, `events` step events (an eval every PER_EPOCH), `finished`."""
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, RUN)
    config = defaults()
    config["train"]["epochs"] = events // PER_EPOCH
    run.config.write_text(dumps(config))
    t0 = time.time() - events / 10 - 60
    run.write_info({"id": RUN, "name": "small_cnn-digits", "kind": "train", "strategy": "single",
                    "started_at": t0, "ended_at": t0 + events / 10, "pid": None})
    head = '{"v":1,"t":%.2f,"run":"' + RUN + '","type":"step","step":%d,"epoch":%d,"loss":%.6g,"count":10,'
    rest = '"lr":0.05,"samples_per_s":%.1f,"mem":{"devices":[],"rss":851443712}}\n'
    evals = ('{"v":1,"t":%.2f,"run":"' + RUN + '","type":"eval","epoch":%d,"step":%d,"val_loss":0.3,'
             '"val_acc":%.4f}\n')
    with open(run.events, "w") as f:
        f.write(json.dumps({"v": 1, "t": t0, "run": RUN, "type": "started", "strategy": "single",
                            "world_size": 1, "devices": ["cpu"]}, separators=(",", ":")) + "\n")
        for first in range(1, events + 1, 10_000):
            lines = []
            for s in range(first, min(first + 10_000, events + 1)):
                t = t0 + s / 10
                lines.append(head % (t, s, 1 + (s - 1) // PER_EPOCH, 2.3 / (1 + s / 500) + 0.05)
                             + rest % (2100.0 - s % 97))
                if s % PER_EPOCH == 0:
                    lines.append(evals % (t, s // PER_EPOCH, s, 0.9 + s / events / 20))
            f.writelines(lines)
        f.write(json.dumps({"v": 1, "t": t0 + events / 10 + 1, "run": RUN, "type": "finished",
                            "best_val_acc": 0.95}, separators=(",", ":")) + "\n")


def console(result: Path, t0: float, events: int, parser: str) -> None:
    """The real app, timing the first right row and the first plot of the whole history."""
    from trainconsole.console.app import TrainConsole
    from trainconsole.console.widgets.runs_table import RunsTable
    from trainconsole.protocol import events as event_log

    if parser == "json":
        event_log.fast_loads = lambda: json.loads
    epoch = str(events // PER_EPOCH)
    times: dict[str, float] = {}

    def mark(what: str) -> None:
        """Wall seconds since exec, and the process's CPU seconds (all threads) by then, once each."""
        if what not in times:
            times[what], times[what + "_cpu"] = time.time() - t0, time.process_time()

    class Timed(TrainConsole):
        CSS_PATH = str(Path(sys.modules[TrainConsole.__module__].__file__ or "").with_name("app.tcss"))

        async def open_dashboard(self) -> None:
            await super().open_dashboard()
            mark("dashboard")
            self.call_after_refresh(mark, "painted")  # the dashboard's first paint (the row's floor)
            frames = self.main.frames  # the dashboard's frames draw (their timers look them up by name)
            draw_frame, draw_plot = frames.draw_frame, frames.draw_plot
            frames.draw_frame = lambda: (draw_frame(), self._row_drawn())
            frames.draw_plot = lambda: (draw_plot(), self._plot_drawn())

        def on_runs_read(self, message: Any) -> None:
            mark("first_read")
            update = message.updates.get(RUN)
            if update is not None and update.state is not None and len(update.state.train_loss) == events:
                mark("history")  # the whole history handed over (a history read, or a replay's end)
            super().on_runs_read(message)

        def _row_drawn(self) -> None:
            table = self.main.query_one(RunsTable)
            if "row" not in times and RUN in self.main.frames.labels:
                status, shown = table.get_cell(RUN, "status"), str(table.get_cell(RUN, "epoch"))
                if str(status) == "finished" and shown.split("/")[0] == epoch:
                    self.call_after_refresh(mark, "row")

        def _plot_drawn(self) -> None:
            run = self.board.runs.get(RUN)
            if "plot" not in times and run is not None and len(run.train_loss) == events:
                self.call_after_refresh(self._plotted)

        def _plotted(self) -> None:
            mark("plot")
            result.write_text(json.dumps(times))
            self.exit()

    Timed().run()


def measure(events: int, parser: str, home: Path, tree: Path | None = None) -> dict[str, float]:
    """One reattach: start the console (of the checkout `tree`, default this one) on a pty, wait for it to
    report, return its times."""
    script = str(tree / "benchmarks" / Path(__file__).name) if tree else __file__
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "times.json"
        t0 = time.time()
        term = Console(home, cmd=[sys.executable, script, "--console", str(result), "--t0", repr(t0),
                                  "--events", str(events), "--parser", parser])
        deadline = time.monotonic() + 120
        while term.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        term.quit()
        if not result.exists():
            raise RuntimeError("the console did not report: " + term.output[-2000:].decode(errors="replace"))
        return {**json.loads(result.read_text()), "frame": term.first_frame or 0.0}


def history_costs(home: Path) -> dict[str, float]:
    """Keeping the run's history (once, by the console that replays its log) and reading it back, in this
    process: seconds (median of 3) and the file's size."""
    from trainconsole.console.core.run_state import RunState
    from trainconsole.console.services import run_history
    from trainconsole.protocol import RunDir, read_all

    run = RunDir(home / "runs" / RUN)
    state, size = RunState(RUN), run.events.stat().st_size
    for event in read_all(run.events):
        state.apply(event)
    writes, reads = [], []
    for _ in range(3):
        t = time.perf_counter()
        assert run_history.write(run, state, size)
        writes.append(time.perf_counter() - t)
        t = time.perf_counter()
        assert run_history.read(run, size) is not None
        reads.append(time.perf_counter() - t)
    kib = os.stat(run_history.path(run)).st_size / 1024
    os.unlink(run_history.path(run))
    return {"history_write_s": round(statistics.median(writes), 3),
            "history_read_s": round(statistics.median(reads), 3), "history_kib": round(kib)}


def main() -> None:
    """Print one JSON line per log size: medians of the row and plot times, per parser (and per console
    with --base)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 500_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parsers", nargs="+", default=["orjson", "json"])
    parser.add_argument("--base", type=Path, help="a checkout of the base commit, run in turn with this tree")
    parser.add_argument("--console", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--parser", default="orjson", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.console:
        console(args.console, args.t0, args.events[0], args.parser)
        return
    for events in args.events:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            make_log(home, events)
            size = (home / "runs" / RUN / "events.jsonl").stat().st_size
            kept = home / "runs" / RUN / "history.json"
            sides = ["base", "fresh", "kept"] if args.base else [""]
            runs: dict[str, list[dict[str, float]]] = {f"{p}_{s}".strip("_"): [] for p in args.parsers
                                                       for s in sides}
            for _ in range(args.repeat):
                for name in args.parsers:
                    for side in sides:
                        if side in ("base", "fresh") and kept.exists():
                            kept.unlink()  # (the base never reads it; `fresh` replays and keeps it)
                        tree = args.base if side == "base" else None
                        runs[f"{name}_{side}".strip("_")].append(measure(events, name, home, tree))
            costs = history_costs(home) if args.base else {}
        out: dict[str, object] = {"benchmark": "console reattach", "events": events,
                                  "log_mib": round(size / 2**20)}
        for name, times in runs.items():
            out[f"{name}_first_frame_s"] = round(statistics.median(t["frame"] for t in times), 2)
            out[f"{name}_read_after_dashboard_s"] = round(  # the reader's first message: tail or history
                statistics.median(t["first_read"] - t["dashboard"] for t in times), 3)
            for what in ("painted", "history"):  # (not timed by an older tree's console)
                if all(what in t for t in times):
                    out[f"{name}_{what}_after_dashboard_s"] = round(
                        statistics.median(t[what] - t["dashboard"] for t in times), 3)
            for what in ("row", "plot"):
                out[f"{name}_{what}_s"] = round(statistics.median(t[what] for t in times), 2)
                out[f"{name}_{what}_after_dashboard_s"] = round(
                    statistics.median(t[what] - t["dashboard"] for t in times), 3)
            for what in ("dashboard", "row", "plot"):
                out[f"{name}_{what}_cpu_s"] = round(statistics.median(t[what + "_cpu"] for t in times), 2)
        for name in args.parsers if args.base else []:
            for what in ("row_s", "plot_s", "row_after_dashboard_s", "plot_after_dashboard_s", "plot_cpu_s"):
                base = out[f"{name}_base_{what}"]
                kept_figure = out[f"{name}_kept_{what}"]
                out[f"{name}_kept_vs_base_{what}"] = round(kept_figure / base, 3) if base else None
        out.update(costs)
        out["machine"] = machine()
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
