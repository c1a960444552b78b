"""A home of many finished runs: `trainconsole ls --json` (and the console's newest row) as N grows.

One real digits run is trained first (`trainconsole run examples/digits.toml --wait`, a few epochs;
or `--source RUN_DIR` is copied); a second copy of it gets a log of a few MB (its own step events
repeated with later steps and times, as a long run's log would hold). The home is then grown to each
size by copying the real run (hard links for its files, so 100,000 runs fit on disk; a fresh
`run.json` for each id): one run in `--big-every` gets the big log. At each size: the first
`ls --json` (it builds the run index for the new runs), then the medians of `--repeat` more (the index
read back; wall and CPU seconds), each alternating with a home of 10 runs so that the ratio is taken
under one load, and the peak RSS; with `--console`, the seconds from exec to the newest run's row on a
120x40 pseudo-terminal (the home of N and the home of 10, alternately, medians) and the console's RSS
once every row is in.

    .venv/bin/python benchmarks/many_runs.py --sizes 10,1000,10000 --repeat 5 --console
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
from console_common import EXE, REPO, Console, machine

NEWEST = "newest"
LINKS = 50_000


def real_run(home: Path, epochs: int) -> Path:
    """Train one real digits run to its end; its directory."""
    env = {**os.environ, "TRAINCONSOLE_HOME": str(home)}
    out = subprocess.run([EXE, "run", "examples/digits.toml", "--set", f"train.epochs={epochs}", "--wait"],
                         cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return home / "runs" / out.stdout.split()[0]


def big_copy(run: Path, dest: Path, megabytes: float) -> Path:
    """A copy of the run whose event log is grown to `megabytes` with its own step events, later steps."""
    shutil.copytree(run, dest)
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    steps = [e for e in events if e["type"] == "step"]
    head = [e for e in events if e["type"] != "finished"]
    tail = [e for e in events if e["type"] == "finished"]
    last_step, last_t, grown, size = steps[-1]["step"], steps[-1]["t"], [], 0
    while size < megabytes * 1e6:
        for e in steps:
            last_step, last_t = last_step + 1, last_t + 0.1
            line = json.dumps({**e, "step": last_step, "t": round(last_t, 3)}, separators=(",", ":"))
            grown.append(line)
            size += len(line) + 1
    lines = [json.dumps(e, separators=(",", ":")) for e in head] + grown
    lines += [json.dumps(e, separators=(",", ":")) for e in tail]
    (dest / "events.jsonl").write_text("\n".join(lines) + "\n")
    return dest


def add_copy(home: Path, source: Path, i: int, name: str, day: str = "20250101") -> None:
    """Run number `i` of the home: the source's files hard-linked, a run.json of its own."""
    run_id = f"{day}-{i:06d}-{name}-{i % 65536:04x}"
    dest = home / "runs" / run_id
    (dest / "checkpoints").mkdir(parents=True)
    for folder, _, files in os.walk(source):
        for file in files:
            if file == "run.json" or file.startswith("."):
                continue
            src = Path(folder) / file
            os.link(src, dest / src.relative_to(source))
    info = json.loads((source / "run.json").read_text())
    # earlier launch times than the source's: a launch after its final event would make it a resumed run
    info.update(id=run_id, name=name, pid=None, pid_started=None, started_at=info["started_at"] - i)
    (dest / "run.json").write_text(json.dumps(info))


def timed_ls(home: Path, runs: int) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one `trainconsole ls --json`,
    which must list every run."""
    env = {**os.environ, "TRAINCONSOLE_HOME": str(home)}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([EXE, "ls", "--json"], env=env, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        listed = len(json.loads(out.read()))
    assert proc.returncode == 0 and listed == runs, (proc.returncode, listed, runs)
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


class WatchedConsole(Console):
    """The console on a pseudo-terminal, all of whose output is kept (the last MiB)."""

    def _drain(self) -> None:
        self.seen = bytearray()
        while True:
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.seen = (self.seen + chunk)[-(1 << 20):]


def newest_row(home: Path, settle: float = 0.0) -> tuple[float, float]:
    """Seconds from exec to the newest run's row on the console's terminal, and the console's RSS (MiB)
    `settle` seconds later (every row taken in by then)."""
    console = WatchedConsole(home)
    try:
        deadline = time.monotonic() + 120
        while NEWEST.encode() not in getattr(console, "seen", b""):
            if time.monotonic() > deadline or console.proc.poll() is not None:
                return float("nan"), float("nan")
            time.sleep(0.005)
        seconds = time.perf_counter() - console.started
        time.sleep(settle)
        return seconds, psutil.Process(console.proc.pid).memory_info().rss / 2**20
    finally:
        console.quit()


def index_settle_s() -> float:
    """A run's files must be still this long before its summary is kept in the index."""
    from trainconsole.protocol.index import SETTLE_S

    return SETTLE_S + 0.5


def measure(home: Path, size: int, base: Path, args: argparse.Namespace) -> dict[str, object]:
    """The first `ls --json` of a home (it builds the index), then `--repeat` more alternating with the
    10-run home's; medians, their ratio, and the console's newest row."""
    cold = timed_ls(home, size)
    warm, small = [], []
    for _ in range(args.repeat):
        small.append(timed_ls(base, 10))
        warm.append(timed_ls(home, size))
    row: dict[str, object] = {"runs": size, "ls_json_first_s": round(cold[0], 3)}
    for name, i in (("wall", 0), ("cpu", 1)):
        mine, ten = statistics.median(w[i] for w in warm), statistics.median(w[i] for w in small)
        row |= {f"ls_json_{name}_s": round(mine, 3), f"ls_json_10_runs_{name}_s": round(ten, 3),
                f"{name}_ratio_to_10": round(mine / ten, 2)}
    row |= {"ls_json_wall_runs_s": [round(w[0], 3) for w in warm],
            "ls_peak_rss_mib": round(max(w[2] for w in [cold, *warm]))}
    if args.console:  # alternating with the 10-run home, as `ls`
        mine, ten = [], []
        for _ in range(args.repeat):
            ten.append(newest_row(base)[0])
            mine.append(newest_row(home, settle=args.settle))
        median = statistics.median(m[0] for m in mine)
        row |= {"console_newest_row_s": round(median, 3),
                "console_newest_row_10_runs_s": round(statistics.median(ten), 3),
                "console_ratio_to_10": round(median / statistics.median(ten), 2),
                "console_newest_row_runs_s": [round(m[0], 3) for m in mine],
                "console_rss_mib": round(max(m[1] for m in mine))}
    return row


def main() -> None:
    """Grow a home to each size and print one JSON line per size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the real run that is copied")
    parser.add_argument("--big-every", type=int, default=100, help="one run in this many has the big log")
    parser.add_argument("--big-mb", type=float, default=3.0)
    parser.add_argument("--console", action="store_true", help="also time the console's newest row")
    parser.add_argument("--source", default="", help="copy this finished run instead of training one")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds after the newest row before the console's RSS is taken")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        real = Path(args.source) if args.source else real_run(Path(tmp) / "template", args.epochs)
        big = big_copy(real, Path(tmp) / "big", args.big_mb)
        base = Path(tmp) / "base"  # a home of 10 runs, timed alternately with each size: ratios in one run
        for home in (base, Path(tmp) / "home"):
            (home / "runs").mkdir(parents=True)
            add_copy(home, real, 0, NEWEST, day="29990101")  # the newest run at every size, found by its name
        for i in range(1, 10):
            add_copy(base, big if i % args.big_every == 0 else real, i, "small-cnn-digits")
        home, have = Path(tmp) / "home", 1
        sources = {}
        for size in (int(s) for s in args.sizes.split(",")):
            for i in range(have, size):
                # a file takes at most 65,000 links (ext4): a fresh copy of the run per LINKS copies
                source = sources.get(i // LINKS) or sources.setdefault(
                    i // LINKS, real if i < LINKS else Path(shutil.copytree(real, Path(tmp) / f"real-{i}")))
                add_copy(home, big if i % args.big_every == 0 else source, i, "small-cnn-digits")
            have = size
            time.sleep(index_settle_s())
            print(json.dumps(measure(home, size, base, args)), flush=True)
        print(json.dumps({"events_bytes_real": (real / "events.jsonl").stat().st_size,
                          "events_bytes_big": (big / "events.jsonl").stat().st_size, "machine": machine()}))


if __name__ == "__main__":
    main()
