"""The web server of `trainconsole serve`: textual-serve's page and websocket protocol (its xterm.js client,
unchanged: `/ws`, JSON `["stdin", ...]` / `["resize", {...}]`), on aiohttp, behind the checks of
`security`.

Every route passes `guard` first: a Host that is not ours is refused (403), then a request with neither
a valid token nor cookie (401, 403 for a wrong one); nothing starts a process before that. The page takes
the token from its URL and sets the cookie; the websocket also needs its Origin to be the page's own.
Each websocket is one console process (`sessions`), at most `max_sessions` at once: the spare that serve
keeps loaded for the next tab (it reads and shows nothing until a websocket that passed every check takes
it), or a fresh one.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from aiohttp import WSMsgType, web
from textual_serve.download_manager import DownloadManager

from .security import Access, Hosts, Tokens, same_origin
from .sessions import Session, Sessions, Spare, console_argv

log = logging.getLogger("trainconsole.serve")
ACCESS = web.AppKey("access", Access)
STATICS = Path(str(files("textual_serve") / "static"))
PAGE = (files("trainconsole.console.serve") / "page.html").read_text()
WS_HEARTBEAT_S = 15.0  # a tab whose browser vanished (no close) is noticed within two of these


@dataclass(frozen=True)
class Settings:
    """What one server serves and to whom."""

    tokens: Tokens
    hosts: Hosts
    max_sessions: int = 3
    idle_timeout: float = 3600.0  # seconds without input from a tab before its console ends; 0: never
    secure: bool = False  # served over TLS: the cookie is Secure too
    title: str = "trainconsole"


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def refusal(status: int, text: str) -> web.Response:
    """A short page saying why (what a browser tab shows)."""
    body = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>trainconsole</title></head><body "
            f"style='font-family:monospace;background:#0c181f;color:#eee;padding:2em'><p>{html.escape(text)}</p>"
            "</body></html>")
    return web.Response(status=status, text=body, content_type="text/html")


class Server:
    """The aiohttp application of one `serve`, and its sessions."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sessions = Sessions(settings.max_sessions)
        self.spare = Spare()  # the next tab's console, loaded ahead
        self.downloads = DownloadManager()

    def app(self) -> web.Application:
        """The routes, all behind `guard`."""
        app = web.Application(middlewares=[self.guard])
        app.add_routes([
            web.get("/", self.page),
            web.get("/ws", self.websocket),
            web.get("/download/{key}", self.download),
            web.static("/static", STATICS),
        ])
        app.on_startup.append(self._start_spare)
        app.on_shutdown.append(self._end_sessions)
        return app

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Host first (DNS rebinding), then the token (on the page) or the cookie (everywhere)."""
        if not self.settings.hosts.allows(request.host):
            return refusal(403, "trainconsole: this server does not answer to that host name "
                                "(serve --allow-host NAME allows one)")
        token = request.query.get("token") if request.path == "/" else None
        presented = token or request.cookies.get(self.settings.tokens.cookie)
        access = self.settings.tokens.access(presented)
        if access is Access.NONE:
            return refusal(403 if presented else 401,
                           "trainconsole: open the URL that `trainconsole serve` printed (with its ?token=)")
        request[ACCESS] = access
        response = await handler(request)
        if token:  # the token becomes this browser's cookie
            response.set_cookie(self.settings.tokens.cookie, token,
                                **self.settings.tokens.cookie_attributes(self.settings.secure))
        return response

    async def page(self, request: web.Request) -> web.Response:
        """The console's page (textual-serve's client), or a page saying there is no room for another tab."""
        if self.sessions.full():
            return self._full()
        title = self.settings.title + (" (read-only)" if request[ACCESS] is Access.READ_ONLY else "")
        font_size = request.query.get("fontsize", "16")
        text = PAGE.replace("{{title}}", html.escape(title)).replace(
            "{{font_size}}", font_size if font_size.isdigit() else "16")
        return web.Response(text=text, content_type="text/html", headers={"Cache-Control": "no-store"})

    def _full(self) -> web.Response:
        n = self.settings.max_sessions
        return refusal(503, f"trainconsole: {n} of {n} sessions are open (serve --max-sessions {n}); "
                            "close another tab of this console, then reload this one.")

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        """One tab's console: refused unless the Origin is ours and there is room; else a process of its
        own, fed the tab's input until the tab closes or goes idle."""
        if not same_origin(request.headers.get("Origin"), request.host):
            return refusal(403, "trainconsole: a websocket from another origin is refused")
        if self.sessions.full():
            return self._full()
        ws = web.WebSocketResponse(heartbeat=WS_HEARTBEAT_S)
        await ws.prepare(request)
        session = Session(console_argv(request[ACCESS] is Access.READ_ONLY), self.spare,
                          write_bytes=ws.send_bytes, write_str=ws.send_str, close=ws.close,
                          download_manager=self.downloads)
        self.sessions.live.add(session)
        try:
            await session.start(_int(request.query.get("width"), 80), _int(request.query.get("height"), 24))
            relay = asyncio.ensure_future(self._relay(ws, session))
            exited = asyncio.ensure_future(session.exited())  # `q` in the tab, or a crash: the tab is told
            await asyncio.wait([relay, exited], return_when=asyncio.FIRST_COMPLETED)
            relay.cancel()
            exited.cancel()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.sessions.live.discard(session)
            await session.end()
            await ws.close()
        return ws

    async def _relay(self, ws: web.WebSocketResponse, session: Session) -> None:
        """The tab's messages to its console, until the tab closes or sends nothing for `idle_timeout`."""
        idle = self.settings.idle_timeout or None
        last = time.monotonic()
        while True:
            left = None if idle is None else max(0.0, last + idle - time.monotonic())
            try:
                message = await ws.receive(timeout=left)
            except TimeoutError:
                log.info("a tab was idle for %.0f s: its console ends", idle)
                return
            if message.type != WSMsgType.TEXT:
                if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                    return
                continue
            last = time.monotonic()
            await self._dispatch(ws, session, message.json())

    async def _dispatch(self, ws: web.WebSocketResponse, session: Session, envelope: object) -> None:
        """textual-serve's messages: stdin, resize, ping, focus, blur."""
        if not isinstance(envelope, list) or not envelope:
            return
        kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
        if kind == "stdin" and isinstance(data, str):
            await session.send_bytes(data.encode())
        elif kind == "resize" and isinstance(data, dict):
            await session.set_terminal_size(_int(data.get("width"), 80), _int(data.get("height"), 24))
        elif kind == "ping":
            await ws.send_json(["pong", data])
        elif kind == "focus":
            await session.focus()
        elif kind == "blur":
            await session.blur()

    async def download(self, request: web.Request) -> web.StreamResponse:
        """A file a console delivers (textual-serve's route; behind the same checks)."""
        key = request.match_info["key"]
        try:
            meta = await self.downloads.get_download_metadata(key)
        except KeyError:
            raise web.HTTPNotFound(text="no such download") from None
        response = web.StreamResponse()
        charset = f"; charset={meta.encoding}" if meta.encoding else ""
        response.headers["Content-Type"] = meta.mime_type + charset
        disposition = "inline" if meta.open_method == "browser" else "attachment"
        response.headers["Content-Disposition"] = f"{disposition}; filename={meta.file_name}"
        await response.prepare(request)
        async for chunk in self.downloads.download(key):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def _start_spare(self, _: web.Application) -> None:
        await self.spare.start()

    async def _end_sessions(self, _: web.Application) -> None:
        await self.spare.end()
        await self.sessions.end_all()


def _int(value: object, default: int) -> int:
    try:
        return max(1, min(1000, int(value)))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return default
