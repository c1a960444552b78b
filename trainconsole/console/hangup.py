"""Quit when the console's terminal goes away (SIGHUP, or a hung-up tty), whoever its parent is.

When a terminal hangs up, the kernel signals only the session's leader. A console started by a shell is
in the terminal's foreground group and gets SIGHUP when that shell exits; one started by `make run` in
tmux does not (make's shell dies, make and the console do not), and Textual's input thread then reads
EOF from the dead tty in a loop (select says readable, read returns nothing) at ~99% of a core, forever.
So the console takes SIGHUP itself and also asks the tty, ten times a second, whether it is still
there (`tcgetattr` fails with EIO once it has hung up). The asking is a thread of its own, not a timer
of the app's: on a busy machine the event loop (beside an input thread spinning on EOF) can fall
seconds behind, and the exit must not wait for it. Runs are separate processes: they go on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import termios
import threading
import time
from typing import Any

CHECK_S = 0.1  # how often the tty is asked (one ioctl)
HUNG_UP = 128 + 1  # the exit status of a process ended by SIGHUP, as a shell reports it
SERVE_PID = "TRAINCONSOLE_SERVE_PID"  # set by `serve` for the console of each browser tab
GRACE_S = 0.3  # after which the console exits without Textual's shutdown (it writes to the dead tty)


def watch(app: Any) -> None:
    """From the app's `on_mount`: quit on SIGHUP or when the tty on stdin hangs up (not when headless)."""
    fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1
    if app.is_headless:
        return
    loop = asyncio.get_running_loop()
    if app.is_web:  # a browser tab's console, from `serve` (which names itself: it may be gone already)
        parent = int(os.environ.get(SERVE_PID, os.getppid()))
        threading.Thread(target=_ask_parent, args=(app, parent, loop), name="serve check",
                         daemon=True).start()
        return
    if fd < 0 or not os.isatty(fd):
        return
    loop.add_signal_handler(signal.SIGHUP, lambda: gone(app, loop))
    threading.Thread(target=_ask_tty, args=(app, fd, loop), name="terminal check", daemon=True).start()


def _ask_tty(app: Any, fd: int, loop: asyncio.AbstractEventLoop) -> None:
    """Ask the tty every CHECK_S until it has hung up (then quit) or the app has stopped running."""
    while not loop.is_closed():
        try:
            termios.tcgetattr(fd)
        except termios.error:
            gone(app, loop)
            return
        time.sleep(CHECK_S)


def _ask_parent(app: Any, parent: int, loop: asyncio.AbstractEventLoop) -> None:
    """A browser tab's console: quit once `serve` is gone. Its input (a pipe from serve) then just ends,
    which Textual's web driver takes without a word, so nothing else would end it (serve killed -9)."""
    while not loop.is_closed():
        if os.getppid() != parent:
            gone(app, loop)
            return
        time.sleep(CHECK_S * 5)


def gone(app: Any, loop: asyncio.AbstractEventLoop) -> None:
    """Exit now: politely if Textual can, for certain within GRACE_S (from any thread)."""
    if getattr(app, "_hung_up", False):
        return
    app._hung_up = True
    timer = threading.Timer(GRACE_S, os._exit, (0,))
    timer.daemon = True
    timer.start()
    try:
        loop.call_soon_threadsafe(lambda: app.exit(return_code=HUNG_UP))
    except RuntimeError:  # the loop has closed: the app is already gone
        pass
