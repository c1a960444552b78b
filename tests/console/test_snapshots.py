"""Snapshots of every pane at 80x24 (one pane at a time) and 120x40 (side by side), from fixed runs.

Update after a deliberate change with: pytest tests/console/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from pathlib import Path

from conftest import after, make_app, settle, steady_cursors

NARROW, WIDE = (80, 24), (120, 40)
DOWN2 = ("down", "down")


class TestWide:
    def test_dashboard(self, snap_compare, fixture_home: Path) -> None:
        """All panes: runs of every status, the running run's loss, GPU bars split by run, its log."""
        assert snap_compare(make_app(fixture_home), terminal_size=WIDE, run_before=settle)

    def test_failed_run_selected(self, snap_compare, fixture_home: Path) -> None:
        """The failed run: its failure cause, hint and traceback on top of the log pane."""
        assert snap_compare(make_app(fixture_home), terminal_size=WIDE, run_before=after("down", "down"))

    def test_no_gpu_overlay_and_form_error(self, snap_compare, fixture_home: Path) -> None:
        """No GPU: host memory by run; two runs overlaid; an invalid lr flagged next to its field."""
        async def before(pilot) -> None:
            await settle(pilot)
            await pilot.press("space", "down", "space", "5")
            await pilot.press(*["tab"] * 5)  # model, dataset, strategy, devices, batch size, lr
            await pilot.press("end", "backspace", "backspace", "backspace", "backspace", "minus", "1")
            await pilot.pause()
            pilot.app.main.frames.draw_frame()
            pilot.app.main.frames.draw_plot()
            await pilot.pause(0.2)
            # The log pane's scroll to its end can land before or after the last layout: pin it.
            pilot.app.main.query_one("#log-scroll").scroll_end(animate=False, immediate=True)
            await steady_cursors(pilot)  # the lr field's cursor, shown as the last key left it

        assert snap_compare(make_app(fixture_home, gpus=0), terminal_size=WIDE, run_before=before)

    def test_weights_view(self, snap_compare, fixture_home: Path) -> None:
        """h: the running run's first layer, a histogram row per epoch on one axis, in the plot's place."""
        assert snap_compare(make_app(fixture_home), terminal_size=WIDE, run_before=after("h"))

    def test_help(self, snap_compare, fixture_home: Path) -> None:
        """? lists every key."""
        assert snap_compare(make_app(fixture_home), terminal_size=WIDE, run_before=after("question_mark"))


class TestNarrow:
    def test_runs_pane(self, snap_compare, fixture_home: Path) -> None:
        """The runs pane with the pane bar and footer."""
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=settle)

    def test_plot_pane(self, snap_compare, fixture_home: Path) -> None:
        """The plot pane: train loss, val loss and val accuracy of the running run; its OOM at step 120."""
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=after("2"))

    def test_weights_view(self, snap_compare, fixture_home: Path) -> None:
        """h then ]: the running run's second layer (a bias drifting from zero) as the plot pane."""
        second_layer = after("h", "right_square_bracket")
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=second_layer)

    def test_devices_pane(self, snap_compare, fixture_home: Path) -> None:
        """The devices pane: two simulated GPUs, and the finished run's torch memory."""
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=after(*DOWN2, "3"))

    def test_devices_pane_without_gpu(self, snap_compare, fixture_home: Path) -> None:
        """No NVIDIA GPU: one line says so, and host memory is split by run RSS."""
        assert snap_compare(make_app(fixture_home, gpus=0), terminal_size=NARROW, run_before=after("3"))

    def test_log_pane_of_failed_run(self, snap_compare, fixture_home: Path) -> None:
        """The failed run's log: the failure first, then warnings with hints."""
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=after(*DOWN2, "4"))

    def test_log_pane_of_lost_run(self, snap_compare, fixture_home: Path) -> None:
        """A run whose process vanished, with a garbled and a half-written line: lost, and said so."""
        lost = after(*DOWN2, *DOWN2, "4")
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=lost)

    def test_setup_pane(self, snap_compare, fixture_home: Path) -> None:
        """The setup form, prefilled with the digits demo."""
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=after("5"))

    def test_kill_confirm(self, snap_compare, fixture_home: Path) -> None:
        """k asks before killing."""
        assert snap_compare(make_app(fixture_home), terminal_size=NARROW, run_before=after("k"))
