"""The plot pane: train loss per step, val loss and val accuracy (right axis) of one run or several."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from trainconsole.console.core.plot import RUN_COLORS, PlotLine

#: One run: a colour per kind of line. Several runs: a colour per run (the selected run first).
KIND_COLORS = {"train": "cyan", "val_loss": "yellow", "val_acc": "green"}
PALETTE = RUN_COLORS
MARKERS = {"val_loss": "◆", "val_acc": "○"}
LEGEND = "[cyan]⣿ train loss[/] [yellow]◆ val loss[/] [green]○ val acc →[/]"
OOM_LEGEND = " [red]│ OOM[/]"  # a vertical line at each step where an out-of-memory was recovered
OVERLAY_LEGEND = "colour = run  ⣿ train loss ◆ val loss ○ val acc →"
TRIALS_LEGEND = "colour = trial, best first; x = iteration"
CUT_LEGEND = " ✕ cut"  # where the early stopper (ASHA) cut a trial


class LossPlot(PlotextPlot):
    """Draws lines that arrive already decimated; redraws only when `show` is given new ones."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.lines: list[PlotLine] = []
        self.message = "no run selected: move the cursor in the runs pane"
        self.xlabel = "step"

    def on_mount(self) -> None:
        """Set the frame's titles and draw the empty state."""
        super().on_mount()
        self.border_title = "loss"
        self.replot()

    def show(self, lines: list[PlotLine], title: str, message: str = "", xlabel: str = "step") -> None:
        """Replace what is drawn: `lines` (run order = colour order), a title, a note if empty, and what
        the x axis counts."""
        self.lines, self.message, self.xlabel = lines, message, xlabel
        self.border_title = title
        overlay = len({line.run_id for line in lines}) > 1
        trials = bool(lines) and all(line.label.startswith("#") for line in lines)  # a search's trials
        legend = TRIALS_LEGEND if trials else OVERLAY_LEGEND if overlay else LEGEND
        legend += OOM_LEGEND if any(line.kind == "oom" for line in lines) else ""
        legend += CUT_LEGEND if any(line.kind == "cut" for line in lines) else ""
        self.border_subtitle = legend if lines else ""
        self.replot()

    def replot(self) -> None:
        """Clear the figure and draw the current lines."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if not self.lines:
            plt.title(self.message)
            self.refresh()
            return
        runs: dict[str, str] = {}
        for line in self.lines:
            runs.setdefault(line.run_id, PALETTE[len(runs) % len(PALETTE)])
        few = max(4, self.size.width // 4)  # val points up to this many get markers, more get a line
        side = "left"
        for line in self.lines:
            if line.kind == "oom":
                for x in line.xs:
                    plt.vline(x, "red")
                continue
            color = runs[line.run_id] if len(runs) > 1 else KIND_COLORS.get(line.kind, "white")
            xs = [int(x) if x.is_integer() else x for x in line.xs]
            if line.kind == "cut":  # on the axis of its trial's line, drawn just before it
                plt.scatter(xs, line.ys, marker="✕", color=color, yside=side)
                continue
            side = "right" if line.kind == "val_acc" else "left"
            if line.kind == "train" or len(xs) > few:
                plt.plot(xs, line.ys, marker="braille", color=color, yside=side)
            else:
                plt.scatter(xs, line.ys, marker=MARKERS[line.kind], color=color, yside=side)
        plt.xlabel(self.xlabel)
        _integer_ticks(plt, [x for line in self.lines for x in line.xs[:1] + line.xs[-1:]])
        self.refresh()


def _integer_ticks(plt: object, ends: list[float]) -> None:
    """Steps are whole numbers: label the x axis with five of them rather than 288.8."""
    low, high = min(ends), max(ends)
    if high - low < 4:
        return
    ticks = sorted({round(low + (high - low) * k / 4) for k in range(5)})
    plt.xticks(ticks, [str(t) for t in ticks])  # type: ignore[attr-defined]
