"""The plot pane: train loss per step, val loss and val accuracy (right axis) of one run or several."""

from __future__ import annotations

from rich.text import Text
from textual.app import RenderResult
from textual.geometry import Size
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

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
    """Draws lines that arrive already decimated; redraws only when `show` is given new ones.

    With a terminal (not in a headless test), plotext builds the figure of new lines in a thread, and the
    figure and its titles are swapped in once built: the build and the parse of its text (~20-30 ms,
    twice a second on a live run) held up the UI thread's reads and frames (issue 47). Any other render
    (a resize, a theme) draws the current lines at once, as before."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.lines: list[PlotLine] = []
        self.message = "no run selected: move the cursor in the runs pane"
        self.xlabel = "step"
        self.ahead = False  # build figures in a thread (set on mount: not in a headless app)
        self._version = 0  # counts `replot`s: a figure built ahead is shown only if none came since
        self._built: tuple[tuple[int, Size, str], Text] | None = None  # the figure built ahead, and for what

    def on_mount(self) -> None:
        """Set the frame's titles and draw the empty state."""
        super().on_mount()
        self.ahead = not self.app.is_headless
        self.border_title = "loss"
        self.replot()

    def show(self, lines: list[PlotLine], title: str, message: str = "", xlabel: str = "step") -> None:
        """Replace what is drawn: `lines` (run order = colour order), a title, a note if empty, and what
        the x axis counts."""
        self.lines, self.message, self.xlabel = lines, message, xlabel
        overlay = len({line.run_id for line in lines}) > 1
        trials = bool(lines) and all(line.label.startswith("#") for line in lines)  # a search's trials
        legend = TRIALS_LEGEND if trials else OVERLAY_LEGEND if overlay else LEGEND
        legend += OOM_LEGEND if any(line.kind == "oom" for line in lines) else ""
        legend += CUT_LEGEND if any(line.kind == "cut" for line in lines) else ""
        self.replot((title, legend if lines else ""))

    def replot(self, titles: tuple[str, str] | None = None) -> None:
        """Clear the figure and draw the current lines (with new `titles`: the title and the legend)."""
        _figure(self.plt, self.lines, self.message, self.xlabel, self.size.width)
        self._version += 1
        if self.ahead and self.lines:
            self._build_ahead(titles)
            return
        if titles is not None:
            self.border_title, self.border_subtitle = titles
        self.refresh()

    def _build_ahead(self, titles: tuple[str, str] | None) -> None:
        """Build the figure in a thread, from its own plotext figure; `_take` swaps it in."""
        key = (self._version, self.size, self._get_plotext_theme_name(self.app.theme))
        lines, message, xlabel = self.lines, self.message, self.xlabel

        def build() -> None:
            try:
                plt = Plot()
                _figure(plt, lines, message, xlabel, key[1].width)
                text: Text | None = _render(plt, key[1], key[2])
            except Exception:  # drawn on the UI thread instead, as before (where it fails the same way)
                text = None
            try:
                self.app.call_from_thread(self._take, key, text, titles)
            except RuntimeError:  # the app is closing
                pass

        self.run_worker(build, thread=True, group="plot-figure", exit_on_error=False)

    def _take(self, key: tuple[int, Size, str], text: Text | None, titles: tuple[str, str] | None) -> None:
        if key[0] != self._version:
            return  # newer lines came meanwhile: their own figure is on its way
        self._built = (key, text) if text is not None else None
        if titles is not None:
            self.border_title, self.border_subtitle = titles
        self.refresh()

    def render(self) -> RenderResult:
        """The figure built ahead for these lines, size and theme, else the current lines drawn now."""
        built, theme = self._built, self._get_plotext_theme_name(self.app.theme)
        if built is not None and built[0] == (self._version, self.size, theme):
            return built[1]
        return super().render()


def _figure(plt: Plot, lines: list[PlotLine], message: str, xlabel: str, width: int) -> None:
    """Clear a plotext figure and put these lines on it (`width`: the pane's columns)."""
    plt.clear_data()
    plt.clear_figure()
    if not lines:
        plt.title(message)
        return
    runs: dict[str, str] = {}
    for line in lines:
        runs.setdefault(line.run_id, PALETTE[len(runs) % len(PALETTE)])
    few = max(4, width // 4)  # val points up to this many get markers, more get a line
    side = "left"
    for line in lines:
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
    plt.xlabel(xlabel)
    _integer_ticks(plt, [x for line in lines for x in line.xs[:1] + line.xs[-1:]])


def _render(plt: Plot, size: Size, theme: str) -> Text:
    """The figure's text at this size and plotext theme, as `PlotextPlot.render` makes it."""
    plt.plotsize(size.width, size.height)
    plt._set_size(size.width, size.height)  # (as PlotextPlot.render does, for its resizes)
    plt.theme(theme)
    return Text.from_ansi(plt.build())


def _integer_ticks(plt: object, ends: list[float]) -> None:
    """Steps are whole numbers: label the x axis with five of them rather than 288.8."""
    low, high = min(ends), max(ends)
    if high - low < 4:
        return
    ticks = sorted({round(low + (high - low) * k / 4) for k in range(5)})
    plt.xticks(ticks, [str(t) for t in ticks])  # type: ignore[attr-defined]
