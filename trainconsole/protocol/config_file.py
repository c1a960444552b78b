"""Reading a config file as TOML text: every path that is not one gets one line naming it and why (stdlib).

A directory, a FIFO, a socket or a device, a file that is not UTF-8 text, one larger than MAX_BYTES, one
that cannot be opened: each is a `ConfigError` whose field is the path, so the CLI prints
`trainconsole: error: PATH: is a directory, not a TOML file` and exits 2 before creating anything.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
from typing import Any

from .config_error import ConfigError

#: The largest config file read: 2 MiB. A config is a few hundred bytes (a big search space a few KB);
#: a larger file is another file given by mistake, and reading it whole would only cost memory.
MAX_BYTES = 2 << 20
TOML_WHERE = re.compile(r"\(at line (?P<line>\d+), column (?P<col>\d+)\)$")
#: What a path that is not a regular file is, by its stat type.
NOT_A_FILE = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
              stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A TOML config file as it is written (not validated)."""
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise toml_error(path, e) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's text, or a ConfigError naming the path and why it is not a TOML text file."""
    fd = _open(path)
    try:
        _check_regular(path, os.fstat(fd))  # before fdopen, which refuses a directory in its own words
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_BYTES + 1)  # st_size can lie (/proc files say 0): count what is read
    except OSError as e:  # EIO and the like, after a successful open
        raise ConfigError(str(path), f"cannot be read: {_reason(e)}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ConfigError(str(path), f"is larger than {MAX_BYTES >> 20} MiB: not a config file")
    return _decode(path, data)


def _open(path: str | os.PathLike[str]) -> int:
    """Open without following a FIFO into a wait: O_NONBLOCK returns at once where no writer is."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(str(path), "file not found") from None
    except OSError as e:
        raise ConfigError(str(path), f"cannot be read: {_reason(e)}") from None


def _reason(error: OSError) -> str:
    """An OSError in a few words: `permission denied`, `no such device or address` (a socket)."""
    if error.errno == errno.EACCES or error.errno == errno.EPERM:
        return "permission denied"
    return (error.strerror or type(error).__name__).lower()


def _check_regular(path: str | os.PathLike[str], info: os.stat_result) -> None:
    """Refuse what is not a regular file (checked on the open descriptor: no race with a rename)."""
    if not stat.S_ISREG(info.st_mode):
        what = NOT_A_FILE.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise ConfigError(str(path), f"is {what}, not a TOML config file")


def _decode(path: str | os.PathLike[str], data: bytes) -> str:
    """UTF-8 text (a leading BOM allowed); a NUL byte or invalid UTF-8 says binary."""
    if b"\0" in data:
        raise ConfigError(str(path), "is a binary file (it holds NUL bytes), not TOML text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(str(path), f"is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}): "
                          "a binary file, or text in another encoding") from None


def toml_error(path: str | os.PathLike[str], error: tomllib.TOMLDecodeError) -> ConfigError:
    """`PATH: line N: is not valid TOML: what (column C)`, from tomllib's "what (at line N, column C)"."""
    where = TOML_WHERE.search(str(error))
    if where is None:
        return ConfigError(str(path), f"is not valid TOML: {error}")
    what = str(error)[: where.start()].rstrip()
    return ConfigError(f"{path}: line {where['line']}", f"is not valid TOML: {what} (column {where['col']})")
