"""A place is one module and one registration: a test-only place (`box_place.py`) runs a real process
through the control layer's launch, status, row and kill, with no line changed elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from trainconsole import protocol
from trainconsole.control import runs
from trainconsole.protocol import places


@pytest.fixture
def box() -> Iterator[None]:
    places.register("box", module="box_place", info_key="box", section="box", control="box_place")
    yield
    places.unregister("box")


def test_a_registered_place_takes_its_runs_through_launch_status_row_and_kill(box: None,
                                                                              tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    config = protocol.defaults()
    config["box"] = {"label": "b1"}
    run = runs.launch(config, name="boxed", root=tmp_path,
                      argv=[sys.executable, "-c", "import time; time.sleep(60)"])
    info = run.read_info()
    assert places.of(info).name == "box" and info["box"]["label"] == "b1"
    pid = info["box"]["pid"]
    assert runs.status(run) == "running"
    assert runs.summary(run)["box"] == {"label": "b1", "pid": pid}
    assert runs.kill(run) == []
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert runs.status(run) == "killed"
    killed = [e for e in protocol.read_all(run.events) if e["type"] == "killed"]
    assert killed and killed[-1]["box"] == "b1"


def test_without_its_registration_a_run_goes_to_this_host(tmp_path: Path) -> None:
    config = protocol.defaults()
    config["box"] = {"label": "b1"}
    assert "box" not in places.names()
    assert places.for_config(config).name == "local"
    assert places.of({"box": {"label": "b1"}}).name == "local"
