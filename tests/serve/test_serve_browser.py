"""The console in a real headless Chromium, through `trainconsole serve`'s printed URLs: keys typed into
the page launch the demo run; the read-only URL of the same server watches and cannot act."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import wait_for
from serve_helpers import EXE, REPO, Served, Tab, alive, first_frame, runs

pytestmark = pytest.mark.slow
BRAILLE = re.compile("[\u2801-\u28ff]")


@pytest.fixture(scope="module")
def served(module_home: Path) -> Iterator[Served]:
    server = Served(module_home)
    yield server
    server.stop()


def test_keys_typed_into_the_page_launch_the_demo_run(browser: object, served: Served) -> None:
    assert served.url is not None
    tab = Tab(browser, served.url)
    first_frame(tab)
    assert "token" not in tab.driver.current_url  # taken out of the address bar once it is a cookie
    # The demo is in the form; one epoch to keep it short: setup pane, the epochs field, 1, enter.
    tab.keys("5", *["\ue004"] * 6)  # \ue004: Tab
    tab.ctrl("u")
    tab.keys("1", "\ue007")  # \ue007: Enter
    (run,) = wait_for(lambda: runs(served.home), 60, "the run in trainconsole ls")
    assert run["name"] == "small_cnn-digits"
    wait_for(lambda: runs(served.home)[0]["status"] == "finished", 180, "the run to finish")
    tab.wait(re.compile(r"finished"), "the page to show it finished", 30)
    tab.wait(BRAILLE, "its loss plotted", 30)
    shot = tab.screenshot("demo-run")
    assert shot.stat().st_size > 10_000
    assert len(served.consoles()) == 1
    tab.close()


def test_the_read_only_url_watches_but_l_and_k_change_nothing(browser: object, served: Served) -> None:
    started = subprocess.run([EXE, "run", "examples/digits.toml", "--set", "train.epochs=200"], cwd=REPO,
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "TRAINCONSOLE_HOME": str(served.home)})
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    before = {r["id"]: r["status"] for r in runs(served.home)}
    tab = Tab(browser, served.read_only_url)
    first_frame(tab, "runs (read-only)")
    text = tab.text()
    assert "setup: new run" not in text  # no form in a read-only session
    tab.wait(re.compile(r"running"), "the CLI's run listed", 60)
    # Live: the selected run's epoch moves on in the table, and its loss is plotted.
    epoch = wait_for(lambda: _epoch(tab.text(), run_id), 120, "an epoch in the table")
    wait_for(lambda: (_epoch(tab.text(), run_id) or 0) > epoch, 120, "the table to update")
    tab.wait(BRAILLE, "the loss plotted", 60)
    mark = len(tab.text())
    tab.keys("l")
    tab.wait("launch: refused", "the launch refused", 30, since=mark)
    mark = len(tab.text())
    tab.keys("k", "y")
    tab.wait("kill: refused", "the kill refused", 30, since=mark)
    assert "Kill run" not in tab.text()[mark:]  # refused at once, not after a confirm
    tab.keys("5")
    tab.wait("the setup form: refused", "the form refused", 30)
    after = {r["id"]: r["status"] for r in runs(served.home)}
    assert after.keys() == before.keys() and after[run_id] == "running"
    pid = next(r["pid"] for r in runs(served.home) if r["id"] == run_id)
    assert alive(pid)
    tab.screenshot("read-only")
    tab.close()


def _epoch(text: str, run_id: str) -> int | None:
    """The epoch the runs table last showed for the run (its row: name, status, strategy, epoch)."""
    rows = re.findall(r"running\s+single\s+(\d+)", text)
    return int(rows[-1]) if rows else None
