"""Who may reach `trainconsole serve`: the tokens, the cookie they become, and the Host and Origin checks.

Jupyter's model: a random token printed once in the URL is exchanged for an HttpOnly, SameSite=Strict
cookie, compared in constant time. A second token opens read-only sessions. The Host header must name
this machine's loopback or a name the user allowed (a DNS-rebinding page reaches a loopback port under
its own name), and a websocket's Origin must be the page's own origin (another site's page can open a
websocket to any port, cookies and all, where SameSite does not apply). Stdlib only, no I/O; `secrets`
and `hmac` (OpenSSL) are imported when first used, since the CLI's parser imports this module (through
`options`) before the console's first frame.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
WILDCARDS = frozenset({"", "0.0.0.0", "::", "*"})


class Access(Enum):
    """What a request's token or cookie lets it do."""

    NONE = "none"
    READ_ONLY = "read-only"
    FULL = "full"


@dataclass(frozen=True)
class Tokens:
    """The secrets of one server: a full-access token (None when the server is read-only), a read-only
    token, and the name of the cookie they are kept in (per server, so two servers on one host's
    loopback, whose cookies browsers do not tell apart by port, do not overwrite each other's)."""

    full: str | None
    read_only: str
    cookie: str = field(default_factory=lambda: f"trainconsole-{_secrets().token_hex(4)}")

    @classmethod
    def fresh(cls, read_only: bool = False) -> Tokens:
        """New random tokens; a `read_only` server has no full-access token at all."""
        secrets = _secrets()
        return cls(full=None if read_only else secrets.token_urlsafe(24), read_only=secrets.token_urlsafe(24))

    def access(self, presented: str | None) -> Access:
        """What `presented` (a query token or a cookie value) grants, compared in constant time."""
        if not presented:
            return Access.NONE
        import hmac

        given = presented.encode()
        # Both compared every time, so the time taken says nothing about which one (nearly) matched.
        full = self.full is not None and hmac.compare_digest(given, self.full.encode())
        read_only = hmac.compare_digest(given, self.read_only.encode())
        if full:
            return Access.FULL
        return Access.READ_ONLY if read_only else Access.NONE

    def cookie_attributes(self, secure: bool) -> dict[str, object]:
        """The cookie's attributes: not readable by scripts, never sent by another site's request. No Path:
        the browser scopes it to the page's own path, so it works behind a proxy's path prefix."""
        return {"httponly": True, "samesite": "Strict", "secure": secure, "path": ""}  # "": none sent


def _secrets():  # noqa: ANN202
    import secrets

    return secrets


def is_loopback(host: str) -> bool:
    """Whether a host name or address (as in a Host header or `--host`) is this machine's loopback."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header, without its port (`[::1]:8000` → `::1`), lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass(frozen=True)
class Hosts:
    """The names a request's Host header may carry: loopback, the bound `--host` (unless a wildcard), and
    each `--allow-host`."""

    bound: str
    allowed: tuple[str, ...] = ()

    def names(self) -> frozenset[str]:
        """The allowed names other than loopback's, lower case."""
        extra = [] if self.bound in WILDCARDS else [self.bound]
        return frozenset(n.strip().strip("[]").lower() for n in [*extra, *self.allowed])

    def allows(self, header: str | None) -> bool:
        """Whether a request with this Host header is for this server (DNS rebinding is refused)."""
        if not header:
            return False
        name = host_name(header)
        return bool(name) and (is_loopback(name) or name in self.names())


def same_origin(origin: str | None, host_header: str | None) -> bool:
    """Whether a websocket's Origin is the served origin: an http(s) page whose host and port are exactly
    the Host the browser sent this request to (behind `ssh -L` or a proxy, both carry the browser's)."""
    if not origin or not host_header:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host_header.strip().lower()
