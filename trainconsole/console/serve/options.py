"""`trainconsole serve`'s options and the checks they get before anything listens (argparse only, so the
CLI's parser stays light: the server's aiohttp is imported when `serve` runs).

A bind beyond loopback needs `--allow-remote`; TLS needs both `--certfile` and `--keyfile`; counts are
positive. A bad option is one `ConfigError` naming it (the CLI's one line, exit 2).
"""

from __future__ import annotations

import argparse
import socket
from dataclasses import dataclass
from pathlib import Path

from trainconsole.protocol import ConfigError

from .security import WILDCARDS, is_loopback

MAX_SESSIONS = 3
IDLE_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class ServeOptions:
    """A checked `serve` command line."""

    host: str = "127.0.0.1"
    port: int = 8000
    read_only: bool = False
    allow_remote: bool = False
    allow_hosts: tuple[str, ...] = ()
    max_sessions: int = MAX_SESSIONS
    idle_timeout: float = IDLE_TIMEOUT_S
    certfile: Path | None = None
    keyfile: Path | None = None

    @property
    def tls(self) -> bool:
        """Whether the server speaks https."""
        return self.certfile is not None


def add_options(cmd: argparse.ArgumentParser) -> None:
    """The `serve` subcommand's options."""
    cmd.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1: this machine only)")
    cmd.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000; 0: any free)")
    cmd.add_argument("--read-only", action="store_true",
                     help="sessions watch only: launch, stop, kill, resume are refused (one read-only URL)")
    cmd.add_argument("--allow-remote", action="store_true",
                     help="allow a --host beyond loopback (use TLS or an SSH tunnel off a trusted network)")
    cmd.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                     help="a host name the browser may reach this server by (a proxy's, a LAN name)")
    cmd.add_argument("--max-sessions", type=int, default=MAX_SESSIONS, metavar="N",
                     help=f"browser tabs open at once, each a console process (default {MAX_SESSIONS})")
    cmd.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT_S, metavar="SECONDS",
                     help=f"end a tab's console after this long without input (default {IDLE_TIMEOUT_S:.0f}; "
                          "0: never)")
    cmd.add_argument("--certfile", type=Path, metavar="PEM", help="serve https with this certificate")
    cmd.add_argument("--keyfile", type=Path, metavar="PEM", help="... and this private key")


def check(args: argparse.Namespace) -> ServeOptions:
    """The command line as `ServeOptions`, or a `ConfigError` naming the first bad option."""
    if not 0 <= args.port <= 65535:
        raise ConfigError("--port", "must be 0..65535", args.port)
    if args.max_sessions < 1:
        raise ConfigError("--max-sessions", "must be >= 1", args.max_sessions)
    if not args.idle_timeout >= 0:
        raise ConfigError("--idle-timeout", "must be a number of seconds >= 0 (0: never)", args.idle_timeout)
    if (args.certfile is None) != (args.keyfile is None):
        raise ConfigError("--certfile", "TLS needs both --certfile and --keyfile")
    for flag, path in (("--certfile", args.certfile), ("--keyfile", args.keyfile)):
        if path is not None and not path.is_file():
            raise ConfigError(flag, "no such file", str(path))
    if not args.allow_remote and not binds_loopback(args.host):
        raise ConfigError("--host", "is not a loopback address: add --allow-remote to serve other machines "
                          "(and use --certfile/--keyfile or an SSH tunnel unless the network is trusted)",
                          args.host)
    return ServeOptions(host=args.host, port=args.port, read_only=args.read_only,
                        allow_remote=args.allow_remote, allow_hosts=tuple(args.allow_host),
                        max_sessions=args.max_sessions, idle_timeout=args.idle_timeout,
                        certfile=args.certfile, keyfile=args.keyfile)


def binds_loopback(host: str) -> bool:
    """Whether listening on `host` reaches this machine only (a name counts if all its addresses do)."""
    if host in WILDCARDS:
        return False
    if is_loopback(host):
        return True
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(addresses) and all(is_loopback(a) for a in addresses)
