"""Plot redraw from a 1,000,000-point loss history, as the console does it on a 120x40 screen.

One redraw = take the selected run's decimated lines out of the board (`plot_view`: min/max per column
from the history's summaries), hand them to the LossPlot widget, and render the widget to terminal
strips (plotext builds the figure; Textual turns it into cells). Median of --repeat redraws, with a new
point appended before each so no cache can answer.

    .venv/bin/python benchmarks/console_plot.py --points 1000000 --repeat 30 --size 120x40
    .venv/bin/python benchmarks/console_plot.py --points 1000000 --repeat 30 --size 99x29
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from console_common import machine
from textual.geometry import Region

from trainconsole.console.app import TrainConsole
from trainconsole.console.core.board import plot_view
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.loss_plot import LossPlot


def history(app: TrainConsole, points: int) -> str:
    """A run with `points` train-loss points (and a val point every 10,000 steps)."""
    run = app.board.get("20240101-000000-big-0001")
    run.name = "big"
    for step in range(1, points + 1):
        run.train_loss.append(step, 2.3 * math.exp(-step / 2e5) + 0.1 * math.sin(step / 50) + 0.2)
        if step % 10_000 == 0:
            run.val_losses.append(step, 0.3)
            run.val_accs.append(step, 0.9)
    return run.id


async def measure(points: int, repeat: int, size: tuple[int, int]) -> dict[str, object]:
    """Time `repeat` redraws after building the history."""
    with tempfile.TemporaryDirectory() as tmp:
        app = TrainConsole(home=Path(tmp), sampler=SimulatedGpus(1))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            app.tailer.stop()  # this benchmark owns the board
            run_id = history(app, points)
            await pilot.press("2")  # the plot pane (alone on screen when the terminal is small)
            await pilot.pause(0.2)
            plot = app.main.query_one(LossPlot)
            times, decimate = [], []
            for i in range(repeat):
                app.board.runs[run_id].train_loss.append(points + i + 1, 0.2)
                t0 = time.perf_counter()
                lines, title = plot_view(app.board, run_id, [], plot.size.width)
                t1 = time.perf_counter()
                plot.show(lines, title)
                plot.render_lines(Region(0, 0, plot.size.width, plot.size.height))
                times.append(time.perf_counter() - t0)
                decimate.append(t1 - t0)
            drawn = sum(len(line.xs) for line in lines)
            plot_size = f"{plot.size.width}x{plot.size.height}"
    return {"benchmark": "plot redraw from a long history", "points": points,
            "median_ms": round(1000 * statistics.median(times), 1),
            "p90_ms": round(1000 * sorted(times)[int(0.9 * (len(times) - 1))], 1),
            "decimation_median_ms": round(1000 * statistics.median(decimate), 2), "points_drawn": drawn,
            "terminal": f"{size[0]}x{size[1]}", "plot_size": plot_size,
            "repeats": repeat, "machine": machine()}


def main() -> None:
    """Print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--size", default="120x40", help="terminal WxH (below 100x30 the plot has it alone)")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.split("x"))
    print(json.dumps(asyncio.run(measure(args.points, args.repeat, size))))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
