"""`serve --max-sessions 2` in a real headless Chromium: the third tab is refused with a page that says so,
closing a tab ends its console, and stopping serve ends every console it started and no run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from processes import wait_for
from serve_helpers import EXE, REPO, Served, Tab, alive, consoles_of, first_frame, runs, wait_gone

pytestmark = pytest.mark.slow


def test_two_sessions_at_most_a_closed_tab_ends_its_console_and_stopping_spares_the_runs(
        browser: object, module_home: Path) -> None:
    env = {**os.environ, "TRAINCONSOLE_HOME": str(module_home)}
    started = subprocess.run([EXE, "run", "examples/digits.toml", "--set", "train.epochs=200"], cwd=REPO,
                             capture_output=True, text=True, timeout=60, env=env)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    served = Served(module_home, "--max-sessions", "2")
    try:
        assert served.url is not None
        tabs = [Tab(browser, served.url), Tab(browser, served.read_only_url)]
        first_frame(tabs[0])
        first_frame(tabs[1], "runs (read-only)")
        consoles = wait_for(lambda: len(c := served.consoles()) == 2 and c, 30, "two consoles")
        third = Tab(browser, served.url)
        assert "2 of 2 sessions are open" in third.page_text()
        third.screenshot("third-tab-refused")
        assert len(served.consoles()) == 2  # the refused tab started none
        third.close()

        closed = {c.pid for c in consoles} - {c.pid for c in _after_close(tabs.pop(), served, consoles)}
        assert len(closed) == 1  # the closed tab's console, and only it, ended
        assert len(served.consoles()) == 1

        remaining = served.consoles()
        run_pid = json.loads((module_home / "runs" / run_id / "run.json").read_text())["pid"]
        log = module_home / "runs" / run_id / "events.jsonl"
        events = wait_for(lambda: log.exists() and log.stat().st_size, 60, "the run's first events")
        said = served.stop(signal.SIGTERM)
        assert served.process.returncode == 0
        assert "1 console(s) ended" in said
        for console in remaining:
            wait_gone(console.pid, 5)
        assert consoles_of(module_home) == [], "a console outlived serve"
        # The run goes on: alive, running, still writing its events.
        assert alive(run_pid)
        assert next(r for r in runs(module_home) if r["id"] == run_id)["status"] == "running"
        wait_for(lambda: log.stat().st_size > events, 60, "the run's next events")
    finally:
        served.stop(signal.SIGKILL)


def _after_close(tab: Tab, served: Served, consoles: list) -> list:
    """Close a tab; the consoles left once its console has ended."""
    tab.close()
    return wait_for(lambda: len(c := served.consoles()) == len(consoles) - 1 and c, 30, "a console to end")
