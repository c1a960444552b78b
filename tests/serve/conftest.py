"""The serve tests' fixtures: one headless Chromium and one home per module (helpers: serve_helpers.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import CHROMEDRIVER, CHROMIUM, chromium_missing, kill_runs


@pytest.fixture(scope="module")
def browser(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One headless Chromium for a test module (tabs are opened per test); without it, the module's browser
    tests are skipped and the reason is printed (past pytest's capture: `make test` runs without -rs)."""
    reason = chromium_missing()
    if reason:
        plugins = request.config.pluginmanager
        reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(f"SKIPPED browser tests of {request.module.__name__}: {reason}",
                                    yellow=True)
        else:
            print(f"SKIPPED browser tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,860",
                "--disable-background-timer-throttling", "--disable-renderer-backgrounding"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A TRAINCONSOLE_HOME shared by a module's tests (and its one server)."""
    home = tmp_path_factory.mktemp("serve") / "home"
    yield home
    kill_runs(home)
