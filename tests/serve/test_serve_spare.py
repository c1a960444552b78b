"""The console serve keeps loaded for the next tab (`serve/spare.py`): a tab takes it, another waits after,
and none outlives serve, stopped or killed. Over plain websockets (no browser)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import psutil
from processes import wait_for
from serve_helpers import Served, alive, wait_gone

from trainconsole.console.serve import spare

SPARE_ARGV = ["-P", "-m", spare.MODULE]


def waiting(served: Served) -> list[psutil.Process]:
    """serve's spares that no tab has taken yet."""
    found = []
    for child in psutil.Process(served.process.pid).children():
        try:
            if child.cmdline()[1:] == SPARE_ARGV and child.name() != "trainconsole":
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


async def open_tab(served: Served, http: aiohttp.ClientSession) -> aiohttp.ClientWebSocketResponse:
    """A tab's websocket (the page's cookie, its own Origin), once its console has drawn `runs`."""
    assert served.url is not None
    async with http.get(served.url) as page:
        (morsel,) = page.cookies.values()
    ws = await http.ws_connect(served.base.replace("http", "ws", 1) + "ws?width=100&height=30", headers={
        "Cookie": f"{morsel.key}={morsel.value}", "Origin": f"http://{urlsplit(served.url).netloc}"})
    shown = b""
    while b"runs" not in shown:
        message = await ws.receive(timeout=60)
        assert message.type == aiohttp.WSMsgType.BINARY
        shown += message.data
    return ws


async def test_a_tab_takes_the_spare_and_another_waits_after_none_outlives_serve(module_home: Path) -> None:
    served = Served(module_home)
    try:
        (first,) = wait_for(lambda: waiting(served), 30, "a spare console, before any tab")
        async with aiohttp.ClientSession() as http:
            ws = await open_tab(served, http)
            (console,) = served.consoles()
            assert console.pid == first.pid  # the tab's console is the one loaded ahead
            (second,) = wait_for(lambda: waiting(served), 30, "the next tab's spare")
            assert second.pid != first.pid
            said = served.stop(signal.SIGTERM)
            await ws.close()
        assert "1 console(s) ended" in said  # (the spare is no tab's console)
        wait_gone(first.pid, 5)
        wait_gone(second.pid, 5)
    finally:
        served.stop(signal.SIGKILL)


def test_a_spare_ends_by_itself_when_serve_is_killed(module_home: Path) -> None:
    served = Served(module_home)
    try:
        (first,) = wait_for(lambda: waiting(served), 30, "a spare console")
        os.kill(served.process.pid, signal.SIGKILL)  # nothing of serve's own ends it: its stdin closes
        wait_gone(first.pid, 30)
    finally:
        served.stop(signal.SIGKILL)
    assert not alive(first.pid)


def test_the_order_is_read_alone_and_what_follows_is_left_for_the_console() -> None:
    read, write = os.pipe()
    try:
        os.write(write, spare.order(132, 41, True) + b"D\x00\x00\x00\x01q")  # then a packet: the key q
        assert spare.read_order(read) == {"width": 132, "height": 41, "read_only": True}
        assert os.read(read, 100) == b"D\x00\x00\x00\x01q"
        os.close(write)
        write = -1
    finally:
        if write >= 0:
            os.close(write)
    assert spare.read_order(read) is None  # serve went before a tab came
    os.close(read)
