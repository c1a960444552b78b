"""A search checks its Ray address before it becomes a run: `tune --ray-address` where no Ray cluster
answers is one line naming the field and the address, exit 2, and no run directory left (it once returned
an id and stayed `running` for minutes, with no event)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from trainconsole.control import ray_address

EXE = str(Path(sys.executable).parent / "trainconsole")


def test_tune_with_an_address_nothing_answers_is_refused_before_a_run_exists(home: Path) -> None:
    out = subprocess.run([EXE, "tune", "--demo", "--ray-address", "127.0.0.1:1"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    (line,) = out.stderr.splitlines()
    assert line.startswith("trainconsole: error: tune.ray_address: no Ray cluster answers at 127.0.0.1:1")
    assert not (home / "runs").exists() or list((home / "runs").iterdir()) == []


def test_an_address_answers_only_while_something_listens_there() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        assert ray_address.problem(address) is None
    assert "refused" in (ray_address.problem(address) or "").lower()
    assert ray_address.problem("") is None and ray_address.problem("auto") is None
