"""Reading a config file: every path that is not TOML text is one ConfigError naming it and why."""

from __future__ import annotations

import errno
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainconsole import protocol
from trainconsole.protocol import ConfigError
from trainconsole.protocol.config_file import MAX_BYTES


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A read that blocks (a FIFO opened the plain way) fails the test instead of hanging the suite."""
    def hung(*_: object) -> None:
        raise AssertionError("reading the config blocked")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def refused(path: Path) -> str:
    """The one line reading `path` gets; it names the path."""
    with pytest.raises(ConfigError) as err:
        protocol.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    assert refused(tmp_path) == f"{tmp_path}: is a directory, not a TOML config file"


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path, no_hang: None) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    assert refused(fifo) == f"{fifo}: is a FIFO (named pipe), not a TOML config file"


def test_a_socket_cannot_be_opened(tmp_path: Path) -> None:
    """open() of a socket fails even for root: the OSError path, in words."""
    path = tmp_path / "s.toml"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert refused(path) == f"{path}: cannot be read: no such device or address"


def test_binary_and_other_encodings_are_not_toml_text(tmp_path: Path) -> None:
    png = tmp_path / "image.toml"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert refused(png) == f"{png}: is a binary file (it holds NUL bytes), not TOML text"
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("[model]\nname = 'small_cnn' # café\n".encode("latin-1"))
    assert "is not UTF-8 text (byte 0xe9 at offset 32)" in refused(latin1)


def test_a_utf8_bom_is_text(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes("\ufeff[train]\nlr = 0.5\n".encode())
    assert protocol.load(path)["train"]["lr"] == 0.5


def test_a_file_over_the_bound_is_refused_unparsed(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("#" * MAX_BYTES + "\n")
    assert refused(big) == f"{big}: is larger than 2 MiB: not a config file"
    fits = tmp_path / "fits.toml"
    fits.write_text("#" * (MAX_BYTES - 1) + "\n")
    assert protocol.load(fits)["train"]["epochs"] > 0


def test_a_missing_file_and_a_file_as_a_folder(tmp_path: Path) -> None:
    assert refused(tmp_path / "nope.toml") == f"{tmp_path / 'nope.toml'}: file not found"
    (tmp_path / "f").write_text("")
    inside = tmp_path / "f" / "c.toml"
    assert refused(inside) == f"{inside}: cannot be read: not a directory"


def test_permission_denied_is_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wording, on any user (root reads a mode-000 file: that case is the CLI test's, where not root)."""
    path = tmp_path / "c.toml"
    path.write_text("")

    def denied(*_: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    assert refused(path) == f"{path}: cannot be read: permission denied"
