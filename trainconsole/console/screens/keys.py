"""The dashboard's keys, in one list for its footer, the first frame's footer and `?` (imports only
Textual's Binding, so the first frame can show them before the dashboard is built)."""

from __future__ import annotations

from textual.binding import Binding

#: The dashboard's own keys, in the footer's order (the first frame shows them too, dimmed, but RARE_ACTIONS).
#: The runs table's own keys beyond `/` (> < # a) do not fit an 80-column footer: the runs pane's bottom
#: border names them.
KEYS = [
    Binding("l,f5", "launch", "Launch", tooltip="Launch the setup form's config, from any pane; in a text "
            "field (the form's, the filter) l is typed: there f5 launches (enter too, in the form)"),
    Binding("s", "stop", "Stop", tooltip="Stop the marked (else the selected) runs: checkpoint, then exit"),
    Binding("k", "kill", "Kill", tooltip="Kill the marked (else the selected) runs, every process (y/n)"),
    Binding("r", "resume", "Resume", tooltip="Resume the marked (else the selected) runs from checkpoints"),
    Binding("x", "stop_trial", "Stop trial", tooltip="Stop the selected trial (the search goes on)"),
    Binding("t", "train_trial", "Train", tooltip="Train the selected (else best) trial's config"),
    Binding("m", "metric", "Metric", tooltip="Plot the selected run's next metric (its loss, then each "
            "other metric its steps log)"),
    Binding("space", "mark", "Mark", tooltip="Mark the selected run (again: unmark): overlaid on the plot; "
            "s k r and delete act on every marked run"),
    Binding("c", "compare", "Compare", tooltip="Compare the overlaid runs: what differs, results, cost"),
    Binding("h", "weights", "Weights", tooltip="The selected run's weight histograms by epoch (h: back)"),
    Binding("right_square_bracket", "layer(1)", "Layer", key_display="[ ]",
            tooltip="Weights: ] the next layer, [ the one before"),
    Binding("left_square_bracket", "layer(-1)", "Weights: the layer before", key_display="[", show=False),
    Binding("slash", "filter", "Filter", key_display="/",
            tooltip="Show only the runs that match a filter, as ls --filter (lr<0.1 tag:x; esc clears)"),
    Binding("greater_than_sign", "sort", "Sort the runs by the next column, then the ranking again (or click "
            "a header)", key_display=">", show=False),
    Binding("less_than_sign", "reverse", "Reverse the sort column's order", key_display="<", show=False),
    Binding("number_sign", "tag", "Set the selected run's tags", key_display="#", show=False),
    Binding("a", "note", "Write the selected run's note (empty removes it)", show=False),
    Binding("delete", "delete", "Move the marked (else the selected) runs to the trash (y/n)", show=False),
]


#: Keys that fit only a few selections (a search's trials, the weights view, two marked runs, a script's
#: metrics): hidden until the dashboard's first frame has selected a run, so that the first frame's footer
#: has room for `q Quit`; the other keys that depend on the selection show dimmed until then.
RARE_ACTIONS = ("stop_trial", "train_trial", "layer", "compare", "metric")
#: Keys that change runs: a read-only console's footer leaves them out (they only say "refused" there).
CHANGING_ACTIONS = ("launch", "stop", "kill", "resume", "stop_trial", "train_trial")


#: Keys that move between panes and load or save the form (listed in `?`, not the footer).
PANE_KEYS = [
    Binding("n,5", "pane('setup')", "Setup pane (new run)", show=False),
    Binding("1", "pane('runs')", "Runs pane", show=False),
    Binding("2", "pane('plot')", "Plot pane", show=False,
            tooltip="Plot pane (a tune run's: its trials' leaderboard by its plot, at 80x24 under it)"),
    Binding("3", "pane('devices')", "Devices pane", show=False),
    Binding("4", "pane('log')", "Log pane", show=False),
    Binding("o", "load", "Load a config TOML into the form", show=False),
    Binding("w", "save", "Save the form as TOML", show=False),
    Binding("escape", "pane('runs')", "Back to the runs pane", show=False),
]
RANK = Binding("b", "rank", "Sort: newest / best val acc", show=False)

#: Why a key that fits only some selections cannot act now (the footer hides it then; pressed anyway,
#: it says so in a toast instead of doing nothing). Bound after the keys themselves, which go first.
WHY_NOT = {
    "stop_trial": "x stops a search's trial: select a tune run (its trials are in the plot pane)",
    "train_trial": "t trains a search's trial: select a tune run (its trials are in the plot pane)",
    "weights": "h shows a training run's weights: a search has none of its own (t trains a trial)",
    "mark": "space marks runs (overlaid on the loss plot): not in the weights view (h: back to the plot)",
    "layer": "[ and ] move between layers in the weights view: press h first",
    "metric": "m plots a run's other metrics: this run logs no metric but its loss",
    "compare": "c compares overlaid runs: mark two or more with space first",
}
#: Space on a search marks it as any run (s k r and delete take it with the others), but from a binding of
#: its own that the footer does not show: beside x and t, an 80-column footer has no room for `space Mark`
#: and `q Quit`. The selection hides `mark` then, and this binding, after it, takes the key.
MARK_SEARCH = Binding("space", "mark_search", "", show=False, system=True)
#: A read-only console's changing keys, pressed anyway: the control layer says they are refused (their own
#: bindings are hidden there, so these, after them, take the keys).
REFUSED = [Binding(key, f"refused('{action}')", "", show=False, system=True)
           for key, action in (("l,f5", "launch"), ("s", "stop"), ("k", "kill"), ("r", "resume"),
                               ("x", "stop_trial"), ("t", "train_trial"))]
WHY = [Binding(key, f"why_not('{action}')", "", show=False, system=True)
       for key, action in (("x", "stop_trial"), ("t", "train_trial"), ("h", "weights"), ("space", "mark"),
                           ("m", "metric"),
                           ("right_square_bracket", "layer"), ("left_square_bracket", "layer"),
                           ("c", "compare"))]
