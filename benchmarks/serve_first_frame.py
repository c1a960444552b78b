"""First frame in a browser tab (`trainconsole serve`, headless Chromium) vs in a terminal (a pty).

Alternately, `--repeat` times: a fresh `trainconsole` on a 120x40 pseudo-terminal, from exec until the
footer's `Quit` has reached the terminal (as `console_startup.py` measures it); and a fresh tab on the
printed URL of one running `serve`, from the tab's navigation start (the page, textual.js, the websocket,
the console process that serve started ahead for it, or a fresh one, and its frames) until `Quit` has
reached the page (a script put into the page before its own records the moment, in the page's clock).
The browser is started once, before; so is `serve`.
Both consoles read the same home of `--runs` finished runs. Needs chromium and chromium-driver (Debian).

    .venv/bin/python benchmarks/serve_first_frame.py --repeat 10 --runs 20
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from console_common import EXE, REPO, cold_start, finished_runs, machine

#: Between a tab and the next terminal: its console ends and serve's next spare loads (not while the
#: terminal's console starts, which would then look slower).
SETTLE_S = 2.0

RECORDER = """
window.__tcOut = "";
window.__tcQuitAt = null;
const NativeWebSocket = window.WebSocket;
const decoder = new TextDecoder();
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (e) => {
      if (typeof e.data === "string" || window.__tcQuitAt !== null) return;
      window.__tcOut += decoder.decode(new Uint8Array(e.data), {stream: true});
      if (window.__tcOut.includes("Quit")) window.__tcQuitAt = performance.now();
    });
  }
};
"""


def serve(home: Path) -> tuple[subprocess.Popen[str], str]:
    """`trainconsole serve --port 0` over `home`; the process and its full-access URL."""
    process = subprocess.Popen([EXE, "serve", "--port", "0", "--max-sessions", "20"], cwd=REPO, text=True,
                               env={**os.environ, "TRAINCONSOLE_HOME": str(home)}, stdout=subprocess.PIPE)
    assert process.stdout is not None
    url = ""
    while not url:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("serve exited")
        if (found := re.search(r"http://\S+\?token=\S+", line)) and "read-only" not in line:
            url = found.group(0)
    return process, url


def browser():  # noqa: ANN201 (selenium's WebDriver, imported here: the dev extras)
    """Headless Chromium at a size that gives a terminal of about 120x40 cells."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def tab_first_frame(driver, url: str) -> float:  # noqa: ANN001
    """A fresh page on `url` in the browser's one (focused) tab: seconds from its navigation start to
    `Quit` in the console's output. (A blurred tab's console shows no footer keys until focused, so the
    page is loaded where the browser's focus is, as a user's would be.)"""
    driver.get(url)
    deadline = time.monotonic() + 60
    while (at := driver.execute_script("return window.__tcQuitAt")) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("no first frame in the tab")
        time.sleep(0.01)
    driver.get("about:blank")  # its console ends with the page
    return at / 1000


def main() -> None:
    """Print both medians and their ratio as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20, help="finished runs in the home directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        finished_runs(home, args.runs, steps=500)
        server, url = serve(home)
        driver = browser()
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
        try:
            tab_first_frame(driver, url)  # the browser's own first start of a page is not counted
            terminal, tabs = [], []
            for _ in range(args.repeat):
                terminal.append(cold_start(home)[0])
                tabs.append(tab_first_frame(driver, url))
                time.sleep(SETTLE_S)  # the left page's console ends, and serve's spare for the next tab loads
        finally:
            driver.quit()
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    term, web = statistics.median(terminal), statistics.median(tabs)
    print(json.dumps({
        "benchmark": "first frame: browser tab (serve) vs terminal", "runs_in_home": args.runs,
        "terminal_median_s": round(term, 3), "terminal_min_s": round(min(terminal), 3),
        "browser_median_s": round(web, 3), "browser_min_s": round(min(tabs), 3),
        "ratio_median": round(web / term, 2), "repeat": args.repeat, "machine": machine(),
    }, indent=1))


if __name__ == "__main__":
    main()
