"""Keys typed ahead (a burst over a slow SSH link, a paste) land where they were typed for, in order."""

from __future__ import annotations

from pathlib import Path

from conftest import make_app, settle, until
from textual import events
from textual.widgets import Input

BURST = ["5", *["tab"] * 6, "ctrl+u", "2", "0", "0"]  # the setup form, the epochs field, 200
CHARS = {"tab": "\t", "ctrl+u": "\x15"}


async def test_a_burst_of_keys_read_before_any_is_handled_lands_in_the_field_it_was_typed_for(
        home: Path) -> None:
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        epochs = app.main.query_one("#train-epochs", Input)
        assert epochs.value != "200"
        before = {i.id: i.value for i in app.main.query(Input) if i is not epochs}
        for key in BURST:  # all of them in the app's queue before the first is handled, as a driver does
            event = events.Key(key, CHARS.get(key, key))
            event.set_sender(app)
            app._driver.send_message(event)
        await until(pilot, lambda: epochs.value == "200", 10, "the epochs field to read 200")
        assert app.focused is epochs
        assert {i.id: i.value for i in app.main.query(Input) if i is not epochs} == before


async def test_a_key_typed_after_the_last_has_landed_is_handled_at_once(home: Path) -> None:
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        assert isinstance(app.focused, Input)
        await pilot.press("tab")  # pilot waits for the screen between keys: nothing is held back
        assert app.focused is app.main.query(Input)[1]
