"""`console/serve/security.py` and the serve options' checks: tokens, the cookie, Host and Origin, binds."""

from __future__ import annotations

import hmac

import pytest

from trainconsole.console.cli import build_parser, main
from trainconsole.console.serve import options
from trainconsole.console.serve.security import Access, Hosts, Tokens, same_origin


def test_each_token_grants_its_access_and_nothing_else_does() -> None:
    tokens = Tokens.fresh()
    assert tokens.full and tokens.read_only and tokens.full != tokens.read_only
    assert tokens.access(tokens.full) is Access.FULL
    assert tokens.access(tokens.read_only) is Access.READ_ONLY
    for wrong in ("", None, tokens.full[:-1], tokens.full + "x", tokens.read_only.upper(), "token"):
        assert tokens.access(wrong) is Access.NONE
    assert len(tokens.full) >= 32 and Tokens.fresh().full != tokens.full  # random, not guessable


def test_a_read_only_server_has_no_full_access_token() -> None:
    tokens = Tokens.fresh(read_only=True)
    assert tokens.full is None
    assert tokens.access(tokens.read_only) is Access.READ_ONLY
    assert tokens.access("None") is Access.NONE


def test_tokens_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    tokens = Tokens("full-secret", "ro-secret", cookie="c")
    assert tokens.access("ro-secret") is Access.READ_ONLY
    assert tokens.access("full-secret") is Access.FULL
    # Both secrets are compared for every value presented, whichever matches.
    assert compared == [(b"ro-secret", b"full-secret"), (b"ro-secret", b"ro-secret"),
                        (b"full-secret", b"full-secret"), (b"full-secret", b"ro-secret")]


def test_the_cookie_is_http_only_same_site_strict_and_secure_over_tls() -> None:
    tokens = Tokens.fresh()
    assert tokens.cookie_attributes(secure=False) == {"httponly": True, "samesite": "Strict", "secure": False,
                                                      "path": ""}
    assert tokens.cookie_attributes(secure=True)["secure"] is True
    assert tokens.cookie.startswith("trainconsole-") and tokens.cookie != Tokens.fresh().cookie


@pytest.mark.parametrize("header", ["localhost:8000", "127.0.0.1:1234", "[::1]:8000", "127.0.0.2",
                                    "LOCALHOST", "localhost", "app.localhost:9000"])
def test_loopback_hosts_are_answered_on_any_port(header: str) -> None:
    assert Hosts("127.0.0.1").allows(header)


@pytest.mark.parametrize("header", ["evil.example:8000", "localhost.evil.example", "127.0.0.1.nip.io:8000",
                                    "10.0.0.5:8000", "", None, "[::1", "0.0.0.0:8000"])
def test_other_hosts_are_refused(header: str | None) -> None:
    """A DNS-rebinding page reaches our port under its own name: its Host header gives it away."""
    assert not Hosts("127.0.0.1").allows(header)


def test_the_bound_name_and_allowed_names_are_answered_but_not_a_wildcard() -> None:
    hosts = Hosts("gpu-box.lan", ("Proxy.Example.org",))
    assert hosts.allows("gpu-box.lan:8000") and hosts.allows("proxy.example.org")
    assert hosts.allows("localhost")
    assert not hosts.allows("other.lan:8000")
    assert not Hosts("0.0.0.0").allows("0.0.0.0:8000")
    assert Hosts("::", ("[fe80::1]",)).allows("[fe80::1]:8000")


@pytest.mark.parametrize(("origin", "host", "same"), [
    ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
    ("http://localhost:9999", "localhost:9999", True),  # behind `ssh -L 9999:...`
    ("https://proxy.example.org", "proxy.example.org", True),
    ("http://localhost:8001", "localhost:8000", False),  # another local server's page
    ("http://evil.example:8000", "127.0.0.1:8000", False),
    ("http://evil.example:8000", "evil.example:8000", True),  # (Host itself is refused by Hosts)
    ("null", "127.0.0.1:8000", False),
    ("file://", "127.0.0.1:8000", False),
    (None, "127.0.0.1:8000", False),
    ("http://127.0.0.1:8000", None, False),
])
def test_a_websocket_origin_must_be_the_served_origin(origin: str | None, host: str | None,
                                                      same: bool) -> None:
    assert same_origin(origin, host) is same


def serve_args(*argv: str) -> object:
    return build_parser().parse_args(["serve", *argv])


def test_loopback_binds_are_allowed_without_allow_remote() -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        assert options.check(serve_args("--host", host)).host == host
    checked = options.check(serve_args())
    assert (checked.host, checked.port, checked.max_sessions) == ("127.0.0.1", 8000, options.MAX_SESSIONS)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "example.org"])
def test_a_bind_beyond_loopback_needs_allow_remote(host: str) -> None:
    with pytest.raises(options.ConfigError, match="^--host: .*--allow-remote.*--certfile/--keyfile or an "):
        options.check(serve_args("--host", host))
    assert options.check(serve_args("--host", host, "--allow-remote")).allow_remote


@pytest.mark.parametrize(("argv", "field"), [
    (["--max-sessions", "0"], "--max-sessions"), (["--port", "70000"], "--port"),
    (["--idle-timeout", "-1"], "--idle-timeout"), (["--certfile", "/etc/hostname"], "--certfile"),
    (["--certfile", "/nonexistent.pem", "--keyfile", "/nonexistent.pem"], "--certfile"),
])
def test_bad_serve_options_name_the_option(argv: list[str], field: str) -> None:
    with pytest.raises(options.ConfigError, match=f"^{field}: "):
        options.check(serve_args(*argv))


def test_the_cli_refuses_a_remote_bind_in_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--host", "0.0.0.0", "--port", "0"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trainconsole: error: --host: ")
