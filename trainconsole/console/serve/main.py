"""`trainconsole serve`: listen, print the URL(s) with their tokens once, serve until SIGINT, SIGTERM or
SIGHUP, then end every console process it started. Runs are never touched: they are detached from the
consoles that launched them, as from a terminal's."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
import sys
from typing import TextIO

from aiohttp import web

from trainconsole.protocol import ConfigError

from .options import ServeOptions
from .security import WILDCARDS, Hosts, Tokens
from .server import Server, Settings

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run(options: ServeOptions, out: TextIO = sys.stdout) -> int:
    """Serve until stopped; 0 once every console it started has ended."""
    logging.basicConfig(level=logging.INFO, format="trainconsole serve: %(message)s", stream=sys.stderr)
    return asyncio.run(_serve(options, out))


def _tls(options: ServeOptions) -> ssl.SSLContext | None:
    if options.certfile is None or options.keyfile is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(options.certfile, options.keyfile)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError("--certfile", f"cannot load the certificate and key: {e}") from None
    return context


async def _serve(options: ServeOptions, out: TextIO) -> int:
    tokens = Tokens.fresh(read_only=options.read_only)
    # Bound to every address: the name the printed URL uses is allowed too.
    named = (url_host(options),) if options.host in WILDCARDS else ()
    hosts = Hosts(options.host, (*options.allow_hosts, *named))
    server = Server(Settings(tokens, hosts, options.max_sessions, options.idle_timeout, secure=options.tls))
    runner = web.AppRunner(server.app(), handle_signals=False, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port, ssl_context=_tls(options))
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        raise ConfigError("--port", f"cannot listen on {options.host}:{options.port}: {e.strerror}") from None
    port = runner.addresses[0][1]
    print(announcement(options, tokens, port), file=out, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOPPING:
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    ended = await server.sessions.end_all()
    await runner.cleanup()
    print(f"trainconsole serve: stopped; {ended} console(s) ended, the runs keep going", file=out, flush=True)
    return 0


def announcement(options: ServeOptions, tokens: Tokens, port: int) -> str:
    """What `serve` prints once: the URL(s) with their tokens, and how to reach them from elsewhere."""
    name = url_host(options)
    base = f"{'https' if options.tls else 'http'}://{f'[{name}]' if ':' in name else name}:{port}/"
    lines = []
    if tokens.full is not None:
        lines.append(f"trainconsole serve: {base}?token={tokens.full}")
    lines.append(f"{'read-only' if tokens.full is not None else 'trainconsole serve (read-only)'}: "
                 f"{base}?token={tokens.read_only}")
    if not options.allow_remote:
        lines.append(f"from your machine: ssh -N -L {port}:127.0.0.1:{port} {socket.gethostname()}, "
                     "then open the URL above")
    elif not options.tls:
        lines.append("warning: plain http beyond this machine: anyone on the network path can read the "
                     "token; use --certfile/--keyfile or an SSH tunnel unless the network is trusted")
    if options.host in WILDCARDS:
        lines.append(f"browsers may reach it as localhost or {name}; --allow-host NAME allows another name")
    lines.append(f"each tab is a console (at most {options.max_sessions}); Ctrl-C stops serving, runs go on")
    return "\n".join(lines)


def url_host(options: ServeOptions) -> str:
    """The host name the printed URL uses: the bound one, this machine's name for a wildcard."""
    return socket.gethostname() if options.host in WILDCARDS else options.host
