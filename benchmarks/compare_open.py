"""Opening the compare view (c) with 100 runs in the home: from the key to the view drawn with its curves.

100 finished runs of `--steps` steps each; the console reads them all, two are marked (space), then `c` is
pressed `--repeat` times (escape in between). One open = the comparison built from the board and the two
config.toml files, the screen composed, its table filled, laid out and rendered, and the curves plotted
(the plot is drawn after the first refresh: the time runs until it has drawn).

    .venv/bin/python benchmarks/compare_open.py --runs 100 --steps 2000 --repeat 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from console_common import machine, make_run
from textual.geometry import Region

from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.compare_screen import CompareScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.loss_plot import LossPlot


async def measure(runs: int, steps: int, repeat: int, size: tuple[int, int]) -> dict[str, object]:
    """Median and worst time from `c` to the compare view drawn."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for i in range(runs):
            make_run(home, f"20240101-{i:06d}-small_cnn-digits-{i:04x}", steps=steps)
        app = TrainConsole(home=home, sampler=SimulatedGpus(1))
        async with app.run_test(size=size) as pilot:
            while not (app.dashboard and app.loaded and len(app.board.runs) == runs):
                await pilot.pause(0.05)
            await pilot.press("space", "down", "space")
            await pilot.pause(0.2)
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                await pilot.press("c")
                while not (isinstance(app.screen, CompareScreen) and app.screen.query_one(LossPlot).lines):
                    await pilot.pause(0)
                plot = app.screen.query_one(LossPlot)
                plot.render_lines(Region(0, 0, plot.size.width, plot.size.height))
                times.append(time.perf_counter() - t0)
                await pilot.press("escape")
                await pilot.pause(0.1)
    return {"benchmark": "compare view open", "runs_in_home": runs, "steps_per_run": steps, "compared": 2,
            "median_ms": round(1000 * statistics.median(times), 1), "max_ms": round(1000 * max(times), 1),
            "terminal": f"{size[0]}x{size[1]}", "repeats": repeat, "machine": machine()}


def main() -> None:
    """Print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--size", default="120x40")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.split("x"))
    print(json.dumps(asyncio.run(measure(args.runs, args.steps, args.repeat, size))))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
