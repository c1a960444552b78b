"""The UI thread's cost of a live read: µs per step event taken into the board (`Board.take`, with the
notices' check), for 50,000 events of console_live.py's shape in batches of `--batch` per run (the tailer's
read of one run), best of 5.

    chrt -f 20 .venv/bin/python benchmarks/board_apply.py
    PYTHONPATH=/tmp/base chrt -f 20 .venv/bin/python benchmarks/board_apply.py   # a base checkout's

(Run from outside the repository for the base's: Python puts the working directory first on the path.)
Alternate the two a few times on a loaded machine and compare the ratios.
"""

from __future__ import annotations

import argparse
import json
import time

import trainconsole
from trainconsole.console.core.board import Board
from trainconsole.console.core.notices import Before, notices
from trainconsole.console.core.run_update import RunUpdate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=25, help="events a read of one run carries")
    args = parser.parse_args()
    events = [json.loads(json.dumps({"v": 1, "t": time.time(), "run": "r", "type": "step", "step": s,
                                     "epoch": 1, "lr": 0.05, "loss": 1.0 + s % 1000 / 1000,
                                     "samples_per_s": 2100.0, "mem": {"devices": [], "rss": 812 << 20}}))
              for s in range(1, args.events + 1)]
    best = float("inf")
    for _ in range(5):
        board = Board()
        start = time.perf_counter()
        for i in range(0, len(events), args.batch):
            update = RunUpdate("r", events=events[i:i + args.batch], alive=True)
            before = Before.of(board.runs.get("r"))
            board.take(update)
            notices(update, before, board.runs.get("r"))
        best = min(best, (time.perf_counter() - start) / len(events))
    print(json.dumps({"benchmark": "board apply", "us_per_event": round(best * 1e6, 2), "batch": args.batch,
                      "tree": trainconsole.__file__.rsplit("/trainconsole/", 1)[0]}))


if __name__ == "__main__":
    main()
