"""Cold start: from exec to the first complete frame on a 120x40 terminal, trainconsole vs a minimal app.

Each repeat starts a fresh process on a pseudo-terminal (no import caches shared between repeats beyond
the OS page cache): `trainconsole` over a home directory holding `--runs` finished runs, and, alternately,
a minimal Textual app (a Static, a DataTable and a Footer, this file with `--minimal`) with the same
Python. Both count as drawn when the footer's `Quit` has reached the terminal. Besides the wall time, the
process's CPU time by then is reported: on a shared, busy machine it moves much less than the wall time.

    .venv/bin/python benchmarks/console_startup.py --repeat 10 --runs 20

With `--base TREE` (another checkout, e.g. `git worktree add /tmp/base HEAD~3`), `python -m
trainconsole.console` from TREE and from this checkout join the turns, and their medians and ratios
(to the minimal app, and this tree's to TREE's) are printed too. Modules are compiled first (both trees),
as an installed package's are: with PYTHONDONTWRITEBYTECODE set, a changed module compiled at every start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from console_common import REPO, cold_start, finished_runs, machine


def minimal_app() -> None:
    """The baseline: the least a console with a table and a footer can be."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Footer, Static

    class Minimal(App[None]):
        BINDINGS = [("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Static("minimal")
            yield DataTable()
            yield Footer()

        def on_mount(self) -> None:
            self.query_one(DataTable).add_columns("run", "status")

    Minimal().run()


def median(starts: list[tuple[float, float, bool]], i: int) -> float:
    """The median of column `i` (0: wall, 1: CPU seconds) of some cold starts (a NaN CPU time left out)."""
    return statistics.median(t[i] for t in starts if t[i] == t[i])


def main() -> None:
    """Print medians (and our min) of both, wall and CPU seconds, and their ratios, as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20, help="finished runs in the home directory")
    parser.add_argument("--base", type=Path, help="another checkout, timed in turn (python -m, from it)")
    parser.add_argument("--minimal", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--module", action="store_true",
                        help="start `python -m trainconsole.console` from this checkout")
    args = parser.parse_args()
    if args.minimal:
        minimal_app()
        return
    module = [sys.executable, "-m", "trainconsole.console"]
    cmd = module if args.module or args.base else None
    for tree in (REPO, *([args.base] if args.base else [])):
        subprocess.run([sys.executable, "-m", "compileall", "-q", "trainconsole"], cwd=tree, check=True,
                       stdout=subprocess.DEVNULL, env={k: v for k, v in os.environ.items()
                                                       if k != "PYTHONDONTWRITEBYTECODE"})
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        finished_runs(home, args.runs, steps=500)
        ours, minimal, base = [], [], []
        for _ in range(args.repeat):
            ours.append(cold_start(home, cmd))
            minimal.append(cold_start(home, [sys.executable, str(Path(__file__).resolve()), "--minimal"]))
            if args.base:
                base.append(cold_start(home, module, cwd=args.base))
    out: dict[str, object] = {"benchmark": "console cold start to first frame", "runs_in_home": args.runs}
    for name, i in (("wall", 0), ("cpu", 1)):
        med, least, floor = median(ours, i), min(t[i] for t in ours), median(minimal, i)
        out |= {f"{name}_median_s": round(med, 3), f"{name}_min_s": round(least, 3),
                f"minimal_app_{name}_median_s": round(floor, 3), f"{name}_ratio": round(med / floor, 2)}
        if args.base:
            then = median(base, i)
            out |= {f"base_{name}_median_s": round(then, 3), f"base_{name}_ratio": round(then / floor, 2),
                    f"{name}_vs_base": round(med / then, 3)}
    # (a first frame without `Quit` in its footer is missed, and the dashboard after it timed instead)
    out["dashboard_timed"] = sum(t[2] for t in ours)
    print(json.dumps({**out, "repeats": args.repeat, "machine": machine()}))


if __name__ == "__main__":
    main()
