"""The browser tabs' consoles: one app process per websocket (textual-serve's design), bounded in number,
ended when their tab closes, goes idle or the server stops.

`Session` is textual-serve's `AppService` (its packet protocol with Textual's web driver, its downloads)
with the process started our way: the console's own argv (no shell between, so the pid we hold is the
app's), in a session of its own (Ctrl-C in serve's terminal reaches serve, which ends its apps in order),
and ended for certain: asked to quit, then its process group killed after a grace period. The runs an
app launched are detached into sessions of their own, so none of this reaches them.

A tab's console is, where one is ready, the `Spare` serve started ahead (`spare.py`: Python, Textual and
the console's modules already loaded), handed the tab's size; another is started once that console has
drawn. A tab's first frame then waits for the console to read the home and draw, not to load.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field
from types import SimpleNamespace

from textual_serve.app_service import AppService

from trainconsole.console.hangup import SERVE_PID
from trainconsole.protocol.launch import module_command

from . import spare

QUIT_GRACE_S = 3.0  # a console asked to quit exits well within this; then its process group is killed


def console_argv(read_only: bool) -> list[str]:
    """The command of one tab's console: this Python's `python -P -m trainconsole.console`, read-only if the
    tab is. `-P`: serve's directory is not on the console's sys.path, so a user's own `trainconsole/`
    folder there cannot shadow ours (as for runs, `protocol.launch`)."""
    return [*module_command("trainconsole.console"), *(["--read-only"] if read_only else [])]


def environment(width: int, height: int) -> dict[str, str]:
    """A tab's console's environment: textual-serve's (its web driver, the terminal's size), and serve's
    pid (the console quits when serve is gone, `hangup`)."""
    built = AppService._build_environment(SimpleNamespace(debug=False), width, height)  # type: ignore[arg-type]
    return {**built, SERVE_PID: str(os.getpid())}


async def _start(argv: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    """A console process: no shell between (the pid is the app's), in a session of its own."""
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, start_new_session=True)


class Spare:
    """The next tab's console, started ahead: loaded, waiting for the tab's size (`spare.py`)."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start one, unless one waits already (serve's start, and once a tab's console has drawn)."""
        if self.process is None or self.process.returncode is not None:
            self.process = await _start(module_command(spare.MODULE), environment(80, 24))

    def take(self, width: int, height: int, read_only: bool) -> asyncio.subprocess.Process | None:
        """The waiting console, told its tab's size and access (None if none waits: start one then)."""
        process, self.process = self.process, None
        if process is None or process.returncode is not None or process.stdin is None:
            return None
        process.stdin.write(spare.order(width, height, read_only))
        return process

    async def end(self) -> None:
        """Serve stops: the waiting console ends (it has shown nothing)."""
        process, self.process = self.process, None
        if process is not None and process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()


class Session(AppService):
    """One tab's console process and the packets between it and the tab's websocket."""

    def __init__(self, argv: list[str], spare: Spare | None = None, **kwargs: object) -> None:
        super().__init__(" ".join(argv), **kwargs)  # type: ignore[arg-type]
        self.argv, self.spare = argv, spare
        self._told_focus = False

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        read_only = "--read-only" in self.argv
        taken = self.spare.take(width, height, read_only) if self.spare is not None else None
        self._process = process = taken or await _start(self.argv, environment(width, height))
        self._stdin = process.stdin
        return process

    async def on_data(self, payload: bytes) -> None:
        """The console's output to the tab; after its first bytes, it is told it has the focus: Textual's
        web driver starts blurred once it is up (a focus sent before is lost, and a blurred footer shows
        no keys), and the page focuses the console as soon as it draws anyway. Then the next tab's spare
        starts (not before: the two would share the CPU)."""
        await super().on_data(payload)
        if not self._told_focus:
            self._told_focus = True
            await self.focus()
            if self.spare is not None:
                await self.spare.start()

    @property
    def pid(self) -> int | None:
        """The console process's pid (None before it started)."""
        return self._process.pid if self._process is not None else None

    async def exited(self) -> int:
        """Wait until the console process has exited; its exit status."""
        assert self._process is not None
        return await self._process.wait()

    async def end(self, grace: float = QUIT_GRACE_S) -> None:
        """Ask the console to quit; kill its process group if it has not within `grace` seconds."""
        process = self._process
        if process is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self.stop()), grace)
        except (TimeoutError, ConnectionError, RuntimeError):
            pass
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        await process.wait()
        if self._task is not None:  # its reader ends at the pipe's EOF
            await asyncio.wait_for(self._task, grace)


@dataclass
class Sessions:
    """The live sessions of one server, at most `limit` of them."""

    limit: int
    live: set[Session] = field(default_factory=set)

    def full(self) -> bool:
        """Whether another tab must be refused."""
        return len(self.live) >= self.limit

    async def end_all(self, grace: float = QUIT_GRACE_S) -> int:
        """End every live session (the server is stopping); how many there were."""
        ending = list(self.live)
        await asyncio.gather(*(s.end(grace) for s in ending), return_exceptions=True)
        self.live.clear()
        return len(ending)
