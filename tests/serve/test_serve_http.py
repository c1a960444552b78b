"""`trainconsole serve` over plain HTTP and websockets (no browser): what is refused, before any console
process starts, and what ends a tab's console. One server for the module."""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from processes import wait_for
from serve_helpers import Served, alive, wait_gone

IDLE_S = 4.0


@pytest.fixture(scope="module")
def served(module_home: Path) -> Iterator[Served]:
    server = Served(module_home, "--idle-timeout", str(IDLE_S))
    yield server
    server.stop()


def parts(served: Served) -> tuple[str, str, str]:
    """The base URL, the full token and the Host a browser sends."""
    assert served.url is not None
    split = urlsplit(served.url)
    return served.base, parse_qs(split.query)["token"][0], split.netloc


async def cookie_of(served: Served) -> tuple[str, str]:
    """The cookie the page sets for the printed URL, checked: HttpOnly, SameSite=Strict."""
    assert served.url is not None
    async with aiohttp.ClientSession() as http, http.get(served.url) as page:
        assert page.status == 200
        assert "static/js/textual.js" in await page.text()
        (morsel,) = page.cookies.values()
        assert morsel["httponly"] and morsel["samesite"] == "Strict" and not morsel["path"]
        return morsel.key, morsel.value


async def test_without_the_token_every_route_is_refused_and_no_console_starts(served: Served) -> None:
    base, token, host = parts(served)
    name, value = await cookie_of(served)
    assert value == token
    upgrade = {"Origin": f"http://{host}", "Connection": "Upgrade", "Upgrade": "websocket",
               "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    # Wrong tokens that are surely wrong: the last character changed, every letter's case swapped.
    last_changed = token[:-1] + ("y" if token.endswith("x") else "x")
    case_swapped = token.swapcase()
    assert last_changed != token and case_swapped != token  # (a token holds letters: secrets.token_urlsafe)
    async with aiohttp.ClientSession() as http:
        for path in ("", "?token=", "ws", "static/js/textual.js", "static/css/xterm.css", "download/abc"):
            async with http.get(base + path, headers=upgrade if path == "ws" else {}) as r:
                assert r.status == 401, path
        for path, headers in (("?token=" + last_changed, {}),
                              ("ws", {**upgrade, "Cookie": f"{name}=nope"}),
                              ("static/js/textual.js", {"Cookie": f"{name}=" + case_swapped})):
            async with http.get(base + path, headers=headers) as r:
                assert r.status == 403, path
        # A token is taken from the page's URL only; elsewhere only the cookie counts.
        async with http.get(base + "static/js/textual.js?token=" + token) as r:
            assert r.status == 401
        async with http.get(base + "static/js/textual.js", headers={"Cookie": f"{name}={value}"}) as r:
            assert r.status == 200  # (the same request with the cookie: served)
    assert served.consoles() == []


async def test_the_page_s_urls_are_relative(served: Served) -> None:
    """So it works behind `ssh -L` on any port and behind a proxy's path prefix: nothing names a host, a
    port or the server's root."""
    assert served.url is not None
    async with aiohttp.ClientSession() as http, http.get(served.url) as page:
        text = await page.text()
    urls = re.findall(r'(?:src|href)="([^"]*)"|url\("([^"]*)"\)|new URL\("([^"]*)"', text)
    found = [u for group in urls for u in group if u]
    assert "static/js/textual.js" in found and "ws" in found
    assert all(not u.startswith(("/", "http:", "https:", "ws:")) for u in found), found


async def test_a_websocket_from_another_origin_or_host_is_refused(served: Served) -> None:
    base, _, host = parts(served)
    name, value = await cookie_of(served)
    ws_url = base.replace("http", "ws", 1) + "ws"
    port = host.rsplit(":", 1)[1]
    cookie = {"Cookie": f"{name}={value}"}
    async with aiohttp.ClientSession() as http:
        refused = [
            {**cookie, "Origin": f"http://evil.example:{port}"},  # another site's page, cookie and all
            {**cookie, "Origin": f"http://localhost:{int(port) + 1}"},  # another local server's page
            {**cookie},  # no Origin at all
            {**cookie, "Origin": f"http://evil.example:{port}", "Host": f"evil.example:{port}"},  # rebinding
        ]
        for headers in refused:
            with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
                await http.ws_connect(ws_url, headers=headers)
            assert handshake.value.status == 403, headers
        assert served.consoles() == []
        async with http.get(base, headers={**cookie, "Host": f"evil.example:{port}"}) as r:
            assert r.status == 403  # the page too answers only to its own names
        # The page's own origin, with the cookie: a console starts for it, and ends when it closes.
        async with http.ws_connect(ws_url + "?width=100&height=30",
                                   headers={**cookie, "Origin": f"http://{host}"}) as ws:
            first = await ws.receive(timeout=60)
            assert first.type == aiohttp.WSMsgType.BINARY
            (console,) = served.consoles()
            assert alive(console.pid)
        wait_gone(console.pid)


async def test_an_idle_tab_s_console_ends(served: Served) -> None:
    base, _, host = parts(served)
    name, value = await cookie_of(served)
    async with aiohttp.ClientSession() as http, http.ws_connect(
            base.replace("http", "ws", 1) + "ws",
            headers={"Cookie": f"{name}={value}", "Origin": f"http://{host}"}) as ws:
        await ws.send_json(["resize", {"width": 100, "height": 30}])
        loop = asyncio.get_running_loop()
        started = loop.time()  # (its idle time counts from here; a spare shows as its console a bit later)
        (console,) = wait_for(served.consoles, 30, "the tab's console")
        while (message := await ws.receive(timeout=60)).type == aiohttp.WSMsgType.BINARY:
            pass  # the console's frames, until the server closes the idle tab
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert loop.time() - started >= IDLE_S - 0.5
    wait_gone(console.pid)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGHUP, signal.SIGKILL])
async def test_ctrl_c_or_a_hang_up_ends_every_console_serve_started(module_home: Path,
                                                                     stop: signal.Signals) -> None:
    """(SIGTERM, with a run going on beside, is in test_serve_sessions.py. Killed, serve ends nothing
    itself: the consoles notice it has gone.)"""
    served = Served(module_home)
    try:
        base, _, host = parts(served)
        name, value = await cookie_of(served)
        async with aiohttp.ClientSession() as http, http.ws_connect(
                base.replace("http", "ws", 1) + "ws",
                headers={"Cookie": f"{name}={value}", "Origin": f"http://{host}"}) as ws:
            await ws.receive(timeout=60)
            (console,) = served.consoles()
            said = served.stop(stop)
        if stop == signal.SIGKILL:
            wait_gone(console.pid, 5)
        else:
            assert served.process.returncode == 0 and "1 console(s) ended" in said
            assert not alive(console.pid)
    finally:
        served.stop(signal.SIGKILL)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
async def test_tls_serves_https_with_a_secure_cookie(module_home: Path, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    served = Served(module_home, "--certfile", str(cert), "--keyfile", str(key))
    try:
        assert served.url is not None and served.url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(cert))
        trust.check_hostname = False  # (the certificate names localhost; the URL has the address)
        async with aiohttp.ClientSession() as http, http.get(served.url, ssl=trust) as page:
            assert page.status == 200
            (morsel,) = page.cookies.values()
            assert morsel["secure"] and morsel["httponly"] and morsel["samesite"] == "Strict"
        async with aiohttp.ClientSession() as http, http.get(served.base, ssl=trust) as page:
            assert page.status == 401
    finally:
        served.stop()


async def test_a_read_only_server_hands_out_read_only_consoles_only(module_home: Path) -> None:
    served = Served(module_home, "--read-only")
    try:
        assert served.url is None  # one URL, the read-only one
        split = urlsplit(served.read_only_url)
        async with aiohttp.ClientSession() as http:
            async with http.get(served.read_only_url) as page:
                (morsel,) = page.cookies.values()
            async with http.ws_connect(served.base.replace("http", "ws", 1) + "ws", headers={
                    "Cookie": f"{morsel.key}={morsel.value}", "Origin": f"http://{split.netloc}"}) as ws:
                shown = b""
                while b"runs (read-only)" not in shown:  # what the console says it is, on the tab
                    message = await ws.receive(timeout=60)
                    assert message.type == aiohttp.WSMsgType.BINARY
                    shown += message.data
                (console,) = served.consoles()
                # (a fresh console's argv says it; the spare serve kept loaded was told so with the tab)
                assert console.cmdline()[1:] in (["-P", "-m", "trainconsole.console", "--read-only"],
                                                 ["-P", "-m", "trainconsole.console.serve.spare"])
    finally:
        served.stop()
