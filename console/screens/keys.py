"""The dashboard's keys, in one list for its footer, the first frame's footer and `?` (imports only
Textual's Binding, so the first frame can show them before the dashboard is built)."""

from __future__ import annotations

from textual.binding import Binding

#: The dashboard's own keys, in the footer's order (the first frame shows them too, dimmed).
KEYS = [
    Binding("l,f5", "launch", "Launch"),
    Binding("s", "stop", "Stop"),
    Binding("k", "kill", "Kill"),
    Binding("r", "resume", "Resume"),
    Binding("x", "stop_trial", "Stop trial", tooltip="Stop the selected trial (the search goes on)"),
    Binding("t", "train_trial", "Train", tooltip="Train the selected (else best) trial's config"),
    Binding("space", "mark", "Overlay"),
    Binding("c", "compare", "Compare", tooltip="Compare the overlaid runs: what differs, results, cost"),
    Binding("h", "weights", "Weights", tooltip="The selected run's weight histograms by epoch (h: back)"),
    Binding("right_square_bracket", "layer(1)", "Layer", key_display="[ ]",
            tooltip="Weights: ] the next layer, [ the one before"),
    Binding("left_square_bracket", "layer(-1)", "Weights: the layer before", key_display="[", show=False),
    Binding("delete", "delete", "Move the marked (else the selected) runs to the trash (y/n)", show=False),
]


#: Keys that move between panes and load or save the form (listed in `?`, not the footer).
PANE_KEYS = [
    Binding("n,5", "pane('setup')", "Setup pane (new run)", show=False),
    Binding("1", "pane('runs')", "Runs pane", show=False),
    Binding("2", "pane('plot')", "Plot pane", show=False),
    Binding("3", "pane('devices')", "Devices pane", show=False),
    Binding("4", "pane('log')", "Log pane", show=False),
    Binding("o", "load", "Load a config TOML into the form", show=False),
    Binding("w", "save", "Save the form as TOML", show=False),
    Binding("escape", "pane('runs')", "Back to the runs pane", show=False),
]
RANK = Binding("b", "rank", "Sort: newest / best val acc", show=False)


def help_keys(global_keys: list[Binding]) -> list[Binding]:
    """Every key of the dashboard and the app's own (`global_keys`), in the order `?` lists them."""
    return [*KEYS, *global_keys, RANK, *PANE_KEYS]
