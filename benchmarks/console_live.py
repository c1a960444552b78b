"""Live load: N runs each appending R step events per second, watched by the real console on a pty.

Lag is measured per event: from the wall time written into the event (just before the writer appends it)
to the moment the console has written the first frame that includes it to its terminal. The console's CPU
is its process's user+system time over the measured window (all threads: tailer, UI, device sampler).

    .venv/bin/python benchmarks/console_live.py --runs 20 --rate 500 --seconds 20

With `--base TREE` (a checkout of the code to compare with, e.g. `git worktree add /tmp/base HEAD~3`),
TREE's console and this tree's take turns, `--rounds` times each, under the same writer; each run's
figures and each side's medians are printed, with the ratio of this tree's p99 lag to TREE's.

Environment knobs (this tree's console only): CONSOLE_LIVE_PROFILE=PATH dumps the UI thread's cProfile to
PATH; CONSOLE_LIVE_SWITCH_S=0.001 tries another GIL switch interval than Python's 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from console_common import Console, machine, make_run


def writer(home: Path, runs: int, rate: int, seconds: float) -> None:
    """Create the runs (this process is their 'trainer'), wait for a line on stdin, then write."""
    paths = [make_run(home, f"20240101-{i:06d}-live-{i:04x}", pid=os.getpid()).events for i in range(runs)]
    print("ready", flush=True)
    sys.stdin.readline()
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
    per_tick = max(1, round(rate * 0.01))  # every 10 ms, or one event a tick below 100 events/s
    tick, step = per_tick / rate, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        step += per_tick
        for i, fd in enumerate(fds):
            lines = [json.dumps({"v": 1, "t": time.time(), "run": paths[i].parent.name, "type": "step",
                                 "step": step + k, "epoch": 1, "lr": 0.05,
                                 "loss": 1.0 + (step + k) % 1000 / 1000,  # (shown anew each event)
                                 "samples_per_s": 2100.0, "mem": {"devices": [], "rss": 812 << 20}})
                     for k in range(per_tick)]
            os.write(fd, ("\n".join(lines) + "\n").encode())
        time.sleep(max(0.0, start + (step / per_tick) * tick - time.perf_counter()))


def console(result: Path, frame_s: float | None, poll_s: float | None) -> None:
    """The real app, instrumented to time each step event from its `t` to the frame that shows it."""
    from trainconsole.console.app import TrainConsole
    from trainconsole.console.core.board import Board
    from trainconsole.console.screens import frames
    from trainconsole.console.screens.frames import Frames
    from trainconsole.console.services import tailer

    if os.environ.get("CONSOLE_LIVE_SWITCH_S"):  # (to try another GIL switch interval than Python's 5 ms)
        sys.setswitchinterval(float(os.environ["CONSOLE_LIVE_SWITCH_S"]))
    if frame_s is not None:  # (to try other paces than the console's own)
        frames.FRAME_S = frame_s
    if poll_s is not None:
        tailer.POLL_S = poll_s

    # per step event: its stamp, when the board took it, when the frame that shows it began
    applied: list[tuple[float, float]] = []  # applied since the last frame was built
    shown: list[tuple[float, float, float]] = []  # in a frame built, not yet written to the terminal
    lags: list[tuple[float, ...]] = []  # whole lag, its three parts, the event's stamp
    original = Board.apply

    def apply(self: Board, run_id: str, events: list) -> int:  # type: ignore[type-arg]
        now = time.time()
        applied.extend((e["t"], now) for e in events if e.get("type") == "step")
        return original(self, run_id, events)

    Board.apply = apply  # type: ignore[method-assign]
    draw = Frames.draw_frame

    def draw_frame(self: Frames) -> None:  # the dashboard's frames (they left the app for `Frames`)
        batch, began = applied[:], time.time()  # Board.apply runs on this (the UI) thread
        applied.clear()
        draw(self)
        shown.extend((t, taken, began) for t, taken in batch)

    Frames.draw_frame = draw_frame  # type: ignore[method-assign]

    class Timed(TrainConsole):
        CSS_PATH = str(Path(sys.modules[TrainConsole.__module__].__file__ or "").with_name("app.tcss"))

        def _display(self, screen, renderable) -> None:  # type: ignore[no-untyped-def]
            super()._display(screen, renderable)
            if renderable is not None and shown:
                now = time.time()
                lags.extend((now - t, taken - t, began - taken, now - began, t) for t, taken, began in shown)
                shown.clear()  # (module lists, mutated in place: an instance attribute here once hid
                # the class's list after the first frame, and only that frame's events were timed)

    app = Timed()
    profile = os.environ.get("CONSOLE_LIVE_PROFILE")  # a path: the UI thread's cProfile, dumped there
    if profile:
        import cProfile
        with cProfile.Profile() as prof:
            app.run()
        prof.dump_stats(profile)
    else:
        app.run()
    result.write_text(json.dumps(lags))


def measure(args: argparse.Namespace, tree: Path | None = None) -> dict[str, object]:
    """Start the writer and the console (of `tree`, else this checkout), let them run, and report lag
    percentiles and console CPU."""
    parts, go, cpu, out_rate = run_live(args, tree)
    return report(args, parts, go + args.warmup, cpu, out_rate)


#: What `--base` compares, per side: the median over its runs of each.
COMPARED = ("lag_p50_ms", "lag_p99_ms", "lag_max_ms", "steady_lag_p99_ms", "p99_read_ms", "p99_frame_wait_ms",
            "p99_frame_ms", "console_cpu_pct_of_core")


def compare(args: argparse.Namespace) -> dict[str, object]:
    """`--base`: the base tree's console and this one's in turn, `args.rounds` times each; both sides'
    medians and the ratios of this tree's to the base's."""
    runs: dict[str, list[dict[str, object]]] = {"base": [], "new": []}
    for _ in range(args.rounds):
        for side, tree in (("base", args.base), ("new", None)):
            runs[side].append(measure(args, tree))
            print(json.dumps({"side": side, **{k: runs[side][-1][k] for k in COMPARED}}), file=sys.stderr)
    medians = {side: {k: statistics.median(float(r[k]) for r in rs) for k in COMPARED}  # type: ignore[arg-type]
               for side, rs in runs.items()}
    return {"benchmark": "console live load, base vs this tree", "base_tree": str(args.base),
            "runs": args.runs,
            "events_per_s_per_run": args.rate, "rounds": args.rounds, **medians,
            "p99_ratio": round(medians["new"]["lag_p99_ms"] / medians["base"]["lag_p99_ms"], 2),
            "cpu_ratio": round(medians["new"]["console_cpu_pct_of_core"]
                               / medians["base"]["console_cpu_pct_of_core"], 2),
            "machine": machine()}


def run_live(args: argparse.Namespace,
             tree: Path | None = None) -> tuple[list[list[float]], float, float, float]:
    """The writer and the instrumented console (`tree`'s own copy of this driver, else this one), for
    `args.seconds`: each event's lag and its parts, when the writer was told to go, the console's CPU
    (share of a core) and its output (bytes/s) past the warm-up."""
    with tempfile.TemporaryDirectory() as tmp:
        home, result = Path(tmp) / "home", Path(tmp) / "lags.json"
        me = [sys.executable, __file__]
        console_me = [sys.executable, str(tree / "benchmarks" / Path(__file__).name)] if tree else me
        feed = subprocess.Popen(
            [*me, "--writer", str(home), "--runs", str(args.runs), "--rate", str(args.rate), "--seconds",
             str(args.seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert feed.stdout is not None and feed.stdout.readline().strip() == "ready"
        paces = [f"--{name}={value}" for name, value in (("frame-s", args.frame_s), ("poll-s", args.poll_s))
                 if value is not None]
        term = Console(home, cmd=[*console_me, "--console", str(result), *paces])
        term.wait_first_frame()
        time.sleep(2.0)  # read the (empty) histories
        assert feed.stdin is not None
        feed.stdin.write("go\n")
        go = time.time()
        feed.stdin.flush()
        time.sleep(args.warmup)
        proc = psutil.Process(term.proc.pid)
        cpu0, wall0, bytes0 = sum(proc.cpu_times()[:2]), time.perf_counter(), term.written
        time.sleep(args.seconds - args.warmup - 1)
        wall = time.perf_counter() - wall0
        cpu = (sum(proc.cpu_times()[:2]) - cpu0) / wall
        out_rate = (term.written - bytes0) / wall
        feed.wait()
        time.sleep(1.0)
        term.quit()
        return json.loads(result.read_text()), go, cpu, out_rate


def report(args: argparse.Namespace, parts: list[list[float]], steady_from: float, cpu: float,
           out_rate: float) -> dict[str, object]:
    """Percentiles of all events' lags, and of the steady ones' (stamped from `steady_from` on: the 20
    runs' first events all come at once, with their first plots and keys) and of their parts."""
    from trainconsole.console.screens import frames  # (the paces the console keeps unless told others)
    from trainconsole.console.services import tailer
    steady = [p for p in parts if p[4] >= steady_from]
    return {"benchmark": "console live load", "runs": args.runs, "events_per_s_per_run": args.rate,
            "events_written": args.runs * args.rate * args.seconds, "events_shown": len(parts),
            "lag_p50_ms": ms(parts, 0, 0.5), "lag_p99_ms": ms(parts, 0, 0.99), "lag_max_ms": ms(parts, 0, 1),
            # after the warm-up (the seconds before CPU is measured), and where that lag goes, each part's
            # own p99: read and taken into the board (the tailer's poll and the UI thread's queue), waiting
            # for the next frame, the frame's build, render and write
            "steady_events": len(steady), "steady_lag_p50_ms": ms(steady, 0, 0.5),
            "steady_lag_p99_ms": ms(steady, 0, 0.99), "p99_read_ms": ms(steady, 1, 0.99),
            "p99_frame_wait_ms": ms(steady, 2, 0.99), "p99_frame_ms": ms(steady, 3, 0.99),
            "console_cpu_pct_of_core": round(100 * cpu, 1),
            "terminal_output_kb_per_s": round(out_rate / 1024, 1),
            "frame_s": frames.FRAME_S if args.frame_s is None else args.frame_s,
            "poll_s": tailer.POLL_S if args.poll_s is None else args.poll_s,
            "machine": machine()}


def ms(parts: list[list[float]], i: int, q: float) -> float:
    """The `q` quantile of column `i` (0: the whole lag), in milliseconds (q = 0.5: the median)."""
    values = sorted(p[i] for p in parts)
    if q == 0.5:
        return round(1000 * statistics.median(values), 1)
    return round(1000 * values[int(q * (len(values) - 1))], 1)


def main() -> None:
    """Dispatch: the measurement (default), or one of its two child processes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rate", type=int, default=500, help="step events per second per run")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0,
                        help="seconds before CPU is measured and the steady lag's events begin")
    parser.add_argument("--frame-s", type=float, help="the console's least time between frames (its own: "
                        "trainconsole/console/screens/frames.py FRAME_S)")
    parser.add_argument("--poll-s", type=float, help="how often the console reads live logs (its own: "
                        "trainconsole/console/services/tailer.py POLL_S)")
    parser.add_argument("--base", type=Path, help="a checkout to compare with, run in turn with this one")
    parser.add_argument("--rounds", type=int, default=3, help="with --base: runs of each side")
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--console", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        writer(args.writer, args.runs, args.rate, args.seconds)
    elif args.console:
        console(args.console, args.frame_s, args.poll_s)
    elif args.base:
        print(json.dumps(compare(args)))
    else:
        print(json.dumps(measure(args)))


if __name__ == "__main__":
    main()
