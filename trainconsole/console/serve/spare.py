"""A browser tab's console, started before its tab: `python -P -m trainconsole.console.serve.spare`.

`serve` keeps one such process ready (`sessions.Spare`). It loads Python, Textual and the console's
modules while no tab waits, then waits for one line on stdin: the tab's terminal size and whether it is
read-only (`order`). Only then does it read the home and open the console, as `python -P -m
trainconsole.console` would, with the same environment (textual-serve's web driver, the serve's pid). A
tab's first frame so waits for none of the loading (benchmarks/serve_first_frame.py). Its stdin closed
before a line came (serve stopped): it exits, having read and shown nothing. Once taken it names itself
`trainconsole` (what `top` and `ps -o comm` show; `tests/serve` tell a tab's console from a waiting one by
it).
"""

from __future__ import annotations

import json
import os
import sys

MODULE = "trainconsole.console.serve.spare"
MAX_LINE = 4096  # an order is a few dozen bytes


def order(width: int, height: int, read_only: bool) -> bytes:
    """The line that hands a spare to a tab."""
    return json.dumps({"width": width, "height": height, "read_only": read_only}).encode() + b"\n"


def read_order(fd: int = 0) -> dict[str, object] | None:
    """The one line `order` wrote, read a byte at a time: what follows it on stdin (the tab's keys, in
    textual-serve's packets) is left unread for the console's web driver. None at end of input."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(line) > MAX_LINE:
            return None
        line += byte
    found = json.loads(line)
    return found if isinstance(found, dict) else None


NAME = b"trainconsole"  # the process's name once a tab has taken it
PR_SET_NAME = 15  # prctl(2), Linux


def preload() -> None:
    """What a tab's console loads before and just after its first frame, loaded now (nothing is read)."""
    import ctypes  # noqa: F401 (for `named`)

    import trainconsole.console.app  # noqa: F401 (Textual, the app and its first screen)
    import trainconsole.console.screens.main_screen  # noqa: F401 (the dashboard: plotext, the form)
    from trainconsole import protocol

    protocol.defaults  # noqa: B018 (the config schema: PEP 562 loads it on first use)


def named(name: bytes = NAME) -> None:
    """Name this process (its `comm`), where the system lets it: a spare taken is a tab's console."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(PR_SET_NAME, name, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        pass


def main() -> int:
    """Load, wait for the tab, then be its console."""
    preload()
    found = read_order()
    if found is None:
        return 0
    named()
    os.environ["COLUMNS"], os.environ["ROWS"] = str(found.get("width", 80)), str(found.get("height", 24))
    from trainconsole.console.app import TrainConsole

    TrainConsole(read_only=bool(found.get("read_only"))).run()  # (as `cli.open_console`)
    return 0


if __name__ == "__main__":
    sys.exit(main())
