"""Keys typed ahead land where they were typed for.

Textual hands a key to the widget focused when the app reads it; the key then bubbles through that
widget's parents, one message queue each, back to the app, which runs its binding only then. Over a slow
SSH link keys arrive in bursts (a paste, fast typing): the app reads the next key while the one before is
still on its way, so after `5 tab tab 2` the `2` goes to whatever was focused before the form opened or
the tabs moved. Here a key read while an earlier key (or a focus change it asked for) is still queued
waits, and the waiting keys are handed on in order, each once the one before has landed. A key read when
nothing is on its way (every key typed at human speed on a quick link, every key a test's pilot presses)
is handled at once.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from textual import events

if TYPE_CHECKING:
    from textual.app import App

RETRY_S = 0.005
MAX_WAIT_S = 2.0  # a key on its way for longer than this (a stuck handler) no longer holds the next ones


class TypeAhead:
    """The app's raw keys, held back while an earlier one is still on its way through the widgets."""

    def __init__(self, app: App[object]) -> None:
        self.app = app
        self.waiting: deque[events.Key] = deque()
        self._handing_on = False
        self._waited = 0.0

    def hold(self, event: events.Key) -> bool:
        """Whether `event`, just read from the terminal, must wait (it is handed on later, in order)."""
        if self._handing_on:
            return False
        if not self.waiting and not self._on_their_way():
            return False
        self.waiting.append(event)
        if len(self.waiting) == 1:
            self._waited = 0.0
            self.app.set_timer(RETRY_S, self._hand_on)
        return True

    async def _hand_on(self) -> None:
        self._waited += RETRY_S
        if self.waiting and (not self._on_their_way() or self._waited >= MAX_WAIT_S):
            self._waited = 0.0
            self._handing_on = True
            try:
                await self.app.on_event(self.waiting.popleft())
            finally:
                self._handing_on = False
        if self.waiting:
            self.app.set_timer(RETRY_S, self._hand_on)

    def _on_their_way(self) -> bool:
        """Whether a key handed to a widget, or a callback (a focus change) for the app, is still queued."""
        if any(isinstance(m, events.Callback) for m in _queued(self.app)):
            return True
        try:
            pumps = list(self.app.screen.walk_children(with_self=True))
        except Exception:  # no screen yet, or closing
            return False
        return any(isinstance(m, events.Key) for pump in [self.app, *pumps] for m in _queued(pump)
                   if m.is_forwarded)


def _queued(pump: object) -> list[object]:
    # Textual's own queue (a cached property: not created here); there is no public way to look into it
    queue = vars(pump).get("_message_queue")
    return list(getattr(queue, "values", ()))  # textual._queue.Queue
