"""A search with `strategy.queue = true` waits in the queue from every door: `trainconsole tune`, the
console's `l`, and `t` on one of its trials (all through the control layer's one launch).

The device is the only fake: TRAINCONSOLE_FREE_MB_FILE says 0 MB free, so a queued run stays queued.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_app, settle, until
from test_leaderboard_pane import tune_home

from trainconsole import protocol
from trainconsole.control import runs

EXE = str(Path(sys.executable).with_name("trainconsole"))
QUEUED = "\n[strategy]\nqueue = true\nmin_free_mb = 1000\n"


@pytest.fixture
def busy_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home, and a device with no free memory (the queue waiters read it from this file)."""
    free = tmp_path / "free_mb"
    free.write_text("0")
    monkeypatch.setenv("TRAINCONSOLE_FREE_MB_FILE", str(free))
    monkeypatch.setenv("TRAINCONSOLE_QUEUE_POLL_S", "0.1")
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    return home


def queued_tune_toml(tmp_path: Path) -> Path:
    """The grid example with its [strategy] asking for the queue."""
    text = Path("examples/tune_digits_grid.toml").read_text().replace('[strategy]\nname = "single"\n', "")
    path = tmp_path / "tune_queued.toml"
    path.write_text(text + QUEUED)
    return path


def assert_waits_in_queue(run: protocol.RunDir) -> None:
    """The run is queued (its waiter alive, no `started`), then killed, leaving nothing."""
    try:
        assert runs.status(run) == "queued"
        info = run.read_info()
        assert info["queued"] and "trainconsole.trainers.lifecycle.queue" in info["argv"]
        assert not [e for e in protocol.read_all(run.events) if e["type"] == "started"]
    finally:
        assert runs.kill(run) == []


def new_runs(home: Path, before: set[str]) -> list[str]:
    return sorted({p.name for p in (home / "runs").iterdir()} - before)


def test_trainconsole_tune_queues(busy_device: Path, tmp_path: Path) -> None:
    done = subprocess.run([EXE, "tune", str(queued_tune_toml(tmp_path))], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    run = protocol.RunDir(busy_device / "runs" / done.stdout.strip())
    assert run.read_info()["kind"] == "tune"
    assert_waits_in_queue(run)


async def test_l_on_a_tune_config_queues(busy_device: Path, tmp_path: Path) -> None:
    app = make_app(busy_device)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.main._load(str(queued_tune_toml(tmp_path)))
        await pilot.pause()
        app.main.action_launch()
        new = await until(pilot, lambda: new_runs(busy_device, set()), 20, "a tune run")
    run = protocol.RunDir(busy_device / "runs" / new[0])
    wait_info(run)
    assert run.read_info()["kind"] == "tune"
    assert_waits_in_queue(run)


async def test_t_on_a_queued_searchs_trial_queues(busy_device: Path) -> None:
    home = tune_home(busy_device, finished=True)
    search = next(p for p in (home / "runs").iterdir() if "tune" in p.name)
    config = search / "config.toml"
    config.write_text(config.read_text().replace('queue = false', 'queue = true')
                      .replace('min_free_mb = 0', 'min_free_mb = 1000'))
    before = {p.name for p in (home / "runs").iterdir()}
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        new = await until(pilot, lambda: new_runs(home, before), 30, "the trial's run")
    run = protocol.RunDir(home / "runs" / new[0])
    wait_info(run)
    assert run.read_info()["kind"] == "train" and "trial2" in run.id
    assert_waits_in_queue(run)


def wait_info(run: protocol.RunDir) -> None:
    """Until run.json records the started waiter (the launch writes it just after the directory)."""
    deadline = time.monotonic() + 20
    while "pid" not in run.read_info() and time.monotonic() < deadline:
        time.sleep(0.05)
