"""Helpers of the serve tests (their fixtures are in conftest.py): the real `trainconsole serve` (a
subprocess, its printed URLs) and a real headless Chromium (Debian's
`chromium` and `chromium-driver`, which `make test` installs; selenium drives it through
/usr/bin/chromedriver, nothing is downloaded). What a tab's console draws is read from its websocket:
a script put into each page before textual.js records the bytes the console sent (xterm.js draws them
on a canvas, out of the DOM's reach)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
from processes import wait_for

REPO = Path(__file__).resolve().parents[2]
EXE = str(Path(sys.executable).parent / "trainconsole")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = Path(os.environ.get("TRAINCONSOLE_TEST_ARTIFACTS", REPO / "test-artifacts"))
ESCAPES = re.compile(r"\x1b(?:\[[0-9;?<>=$]*[ -/]*[@-~]"  # CSI
                     r"|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")  # OSC, charsets, modes
#: Put into every page before its own scripts: the console's output, as text, in window.__tcOut.
RECORDER = """
window.__tcOut = "";
const NativeWebSocket = window.WebSocket;
const decoder = new TextDecoder();
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      window.__tcOut += decoder.decode(new Uint8Array(e.data), {stream: true});
    });
  }
};
"""


class Served:
    """One `trainconsole serve --port 0 ARGS` for a home; its URLs as printed."""

    def __init__(self, home: Path, *args: str, cwd: Path = REPO) -> None:
        self.home = home
        env = {**os.environ, "TRAINCONSOLE_HOME": str(home)}
        self.process = subprocess.Popen([EXE, "serve", "--port", "0", *args], cwd=cwd, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.printed: list[str] = []
        assert self.process.stdout is not None
        while not any("Ctrl-C stops serving" in line for line in self.printed):
            line = self.process.stdout.readline()
            assert line, f"serve exited: {''.join(self.printed)}"
            self.printed.append(line)
        self.url: str | None = None  # full access (None for a --read-only server)
        for line in self.printed:
            if found := re.search(r"https?://\S+\?token=\S+", line):
                if "read-only" in line:
                    self.read_only_url = found.group(0)
                else:
                    self.url = found.group(0)
        self.base = self.read_only_url.split("?")[0]

    def consoles(self) -> list[psutil.Process]:
        """The console processes serve started (its children; the runs they launch are not counted)."""
        try:
            children = psutil.Process(self.process.pid).children()
        except psutil.NoSuchProcess:
            return []
        return [c for c in children if _is_console(c)]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> str:
        """Stop serve with `sig`; what it printed after its URLs."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            rest, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            rest, _ = self.process.communicate()
        return rest or ""


def consoles_of(home: Path) -> list[int]:
    """Every console process of this home still running, whoever started it."""
    found = []
    for p in psutil.process_iter():
        try:
            if _is_console(p) and p.environ().get("TRAINCONSOLE_HOME") == str(home) \
                    and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _is_console(process: psutil.Process) -> bool:
    """A tab's console: started for it, or the spare serve keeps loaded once a tab has taken it (it then
    names itself `trainconsole`; waiting, it has read and shown nothing)."""
    try:
        argv = process.cmdline()[1:]
        if argv == ["-P", "-m", "trainconsole.console.serve.spare"]:
            return process.name() == "trainconsole"
        return argv in (["-P", "-m", "trainconsole.console"],
                        ["-P", "-m", "trainconsole.console", "--read-only"])
    except (psutil.NoSuchProcess, psutil.ZombieProcess, IndexError):
        return False


def runs(home: Path) -> list[dict[str, Any]]:
    """`trainconsole ls --json` for this home."""
    out = subprocess.run([EXE, "ls", "--json"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TRAINCONSOLE_HOME": str(home)})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def kill_runs(home: Path) -> None:
    """Whatever a test left running in its home."""
    for run in (home / "runs").glob("*"):
        subprocess.run([EXE, "kill", run.name], capture_output=True, timeout=60,
                       env={**os.environ, "TRAINCONSOLE_HOME": str(home)})


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        return f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver (make test does)"
    return None


class Tab:
    """One browser tab on a served page."""

    def __init__(self, driver: Any, url: str) -> None:
        self.driver = driver
        driver.switch_to.window(driver.window_handles[-1])
        if driver.current_url not in ("about:blank", "data:,"):
            driver.switch_to.new_window("tab")
        self.handle = driver.current_window_handle
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
        driver.get(url)

    def focus(self) -> Tab:
        self.driver.switch_to.window(self.handle)
        return self

    def text(self) -> str:
        """Everything the console sent this tab so far, without escape sequences."""
        self.focus()
        return ESCAPES.sub("", self.driver.execute_script("return window.__tcOut || ''"))

    def wait(self, needle: str | re.Pattern[str], what: str, timeout: float = 60, since: int = 0) -> str:
        """Wait until the console has drawn `needle` (after the first `since` characters)."""
        def seen() -> str | None:
            text = self.text()[since:]
            found = needle.search(text) if isinstance(needle, re.Pattern) else needle in text
            return text if found else None
        try:
            return wait_for(seen, timeout, what)
        except AssertionError:
            self.screenshot(f"failed-{re.sub(r'[^a-z]+', '-', what.lower())}")
            raise

    def keys(self, *keys: str) -> None:
        """Type into the page (the focused terminal), one key at a time."""
        from selenium.webdriver.common.action_chains import ActionChains

        self.focus()
        for key in keys:
            ActionChains(self.driver).send_keys(key).perform()
            time.sleep(0.15)

    def ctrl(self, key: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        self.focus()
        ActionChains(self.driver).key_down(Keys.CONTROL).send_keys(key).key_up(Keys.CONTROL).perform()
        time.sleep(0.15)

    def body_classes(self) -> str:
        self.focus()
        return self.driver.find_element("tag name", "body").get_attribute("class") or ""

    def page_text(self) -> str:
        self.focus()
        return self.driver.find_element("tag name", "body").text

    def screenshot(self, name: str) -> Path:
        """Keep what the page shows as a test artifact."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"serve-{name}.png"
        self.focus()
        self.driver.save_screenshot(str(path))
        return path

    def close(self) -> None:
        """Close the tab (its websocket goes with it)."""
        self.focus()
        if len(self.driver.window_handles) == 1:  # closing the last one would end the browser's session
            self.driver.switch_to.new_window("tab")
            self.driver.switch_to.window(self.handle)
        self.driver.close()
        self.driver.switch_to.window(self.driver.window_handles[0])


def first_frame(tab: Tab, dashboard: str = "setup: new run", timeout: float = 60) -> None:
    """Wait until the tab's console has drawn its dashboard (by default, its setup pane's title; the first
    frame before it shows the keys too, but takes none)."""
    wait_for(lambda: "-first-byte" in tab.body_classes(), timeout, "the console's first bytes")
    tab.wait(dashboard, "the dashboard", timeout)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, timeout: float = 15) -> None:
    wait_for(lambda: not alive(pid), timeout, f"process {pid} to end")
