"""The real `trainconsole` in a real terminal (tmux): launch, watch and kill by keys; hang up; reattach."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from processes import gone

REPO = Path(__file__).resolve().parents[2]
EXE = str(Path(sys.executable).parent / "trainconsole")
BRAILLE = re.compile("[\u2801-\u28ff]")
COLOUR = re.compile(r"\x1b\[[0-9;]*(?:38|48);[25];")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]


class Terminal:
    """One tmux server (own socket) with a 120x40 window running a command."""

    def __init__(self, home: Path) -> None:
        self.socket, self.home = f"tc-{uuid.uuid4().hex[:8]}", home

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=True).stdout

    def open(self, name: str, command: str, env: str = "") -> None:
        shell = (f"cd {REPO} && env -u COLUMNS -u LINES TRAINCONSOLE_HOME={self.home} TERM=xterm-256color "
                 f"{env} {command}")
        self.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", shell)
        self.tmux("set-option", "-t", name, "remain-on-exit", "on")
        self.tmux("set-option", "-t", name, "window-size", "manual")
        self.tmux("resize-window", "-t", name, "-x", "120", "-y", "40")

    def keys(self, name: str, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", name, key)
            time.sleep(0.15)

    def screen(self, name: str, escapes: bool = False, history: bool = False) -> str:
        extra = (["-e"] if escapes else []) + (["-S", "-"] if history else [])
        return self.tmux("capture-pane", "-p", *extra, "-t", name)

    def wait(self, name: str, check: Callable[[str], object], what: str, timeout: float = 60,
             history: bool = False) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen(name, history=history)
            if check(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen(name)}")

    def console_pid(self, name: str) -> int:
        pane = psutil.Process(int(self.tmux("display-message", "-p", "-t", name, "#{pane_pid}").strip()))
        procs = [pane, *pane.children(recursive=True)]
        return next(p.pid for p in procs if any("trainconsole" in part for part in p.cmdline()))

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def term(home: Path) -> Iterator[Terminal]:
    terminal = Terminal(home)
    yield terminal
    terminal.close()
    for run in (home / "runs").glob("*"):  # whatever the test left running
        subprocess.run([EXE, "kill", run.name], capture_output=True, timeout=30)


def run_pids(home: Path) -> tuple[str, list[int]]:
    (run,) = (home / "runs").iterdir()
    pid = json.loads((run / "run.json").read_text())["pid"]
    proc = psutil.Process(pid)
    return run.name, [pid, *(c.pid for c in proc.children(recursive=True))]


def test_launch_watch_and_kill_by_keys(term: Terminal, home: Path) -> None:
    term.open("c", EXE)
    term.wait("c", lambda s: "no runs yet" in s, "the first frame", 20)
    # The demo is prefilled; make it long enough to kill mid-run: setup pane, epochs field, 200, enter.
    term.keys("c", "5", *["Tab"] * 6, "C-u", "200", "Enter")
    screen = term.wait("c", lambda s: "running" in s and len(BRAILLE.findall(s)) > 5, "the loss plotted")
    assert "loss: small_cnn-digits·" in screen
    run_id, pids = run_pids(home)
    maps = Path(f"/proc/{term.console_pid('c')}/maps").read_text()
    assert "torch" not in maps, "the console process loaded torch"
    term.keys("c", "1", "h")  # the weights view: a row per finished epoch of the real run's first layer
    term.wait("c", lambda s: "weights: 0.weight (1/8)" in s and re.search(r"ep\s+3 .*█", s), "histograms", 20)
    term.keys("c", "h", "k")
    term.wait("c", lambda s: "Kill run" in s, "the confirm dialog", 10)
    term.keys("c", "y")
    term.wait("c", lambda s: re.search(r"killed\s", s), "status killed", 30)
    deadline = time.monotonic() + 5
    while not gone(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(pids), f"processes of {run_id} survived"
    term.keys("c", "q")
    term.wait("c", lambda s: "keep going" in s, "the goodbye line", 10, history=True)


def test_hangup_leaves_runs_going_and_a_new_console_reattaches(term: Terminal, home: Path) -> None:
    started = subprocess.run([EXE, "run", "examples/digits.toml", "--set", "train.epochs=200"], cwd=REPO,
                             capture_output=True, text=True, timeout=60, env={**os.environ})
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    term.open("a", EXE)
    term.wait("a", lambda s: "running" in s and len(BRAILLE.findall(s)) > 5, "the CLI's run plotted")
    console = term.console_pid("a")
    _, pids = run_pids(home)
    term.close()  # the terminal goes away: the console gets SIGHUP
    deadline = time.monotonic() + 10
    while psutil.pid_exists(console) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not psutil.pid_exists(console) and not gone(pids), "the hang-up reached the run"
    steps = sum('"type":"step"' in line for line in (home / "runs" / run_id / "events.jsonl").open())
    term.open("b", EXE, env="NO_COLOR=1")
    first = term.wait("b", lambda s: "running" in s and len(BRAILLE.findall(s)) > 5, "the reattached plot")
    assert run_id.rsplit("-", 1)[-1] in first
    assert not COLOUR.search(term.screen("b", escapes=True)), "NO_COLOR was not honoured"
    grown = term.wait("b", lambda s: s != first, "live updates", 30)
    assert "running" in grown and steps > 0


def test_console_under_make_exits_when_its_terminal_goes_away(term: Terminal, home: Path,
                                                              tmp_path: Path) -> None:
    # Under make, killing the tmux server hangs up the tty but signals only the session leader: the console
    # (make's child) gets no SIGHUP and its terminal reads return EOF. It must notice and exit all the same.
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "Makefile").write_text(f".PHONY: run\nrun:\n\t{EXE}\n")  # what `make run` does, minus pip
    term.open("m", f"make --no-print-directory -f {recipes / 'Makefile'} run")
    term.wait("m", lambda s: "no runs yet" in s, "the first frame", 30)
    console = psutil.Process(term.console_pid("m"))
    assert any(p.name() == "make" for p in console.parents()), "the console is not make's child"
    term.keys("m", "5", *["Tab"] * 6, "C-u", "200", "Enter")
    term.wait("m", lambda s: "running" in s, "the run launched from the console")
    _, pids = run_pids(home)
    term.close()  # kill the tmux server: the terminal is gone
    deadline = time.monotonic() + 5
    while not gone([console.pid]) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert gone([console.pid]), f"the console outlived its terminal ({console.cpu_percent(0.5)}% CPU)"
        assert not gone(pids), "the run died with the console"
    finally:
        if not gone([console.pid]):
            console.kill()


def test_compare_two_runs_in_a_real_terminal(term: Terminal, home: Path) -> None:
    for lr in ("0.05", "0.1"):
        done = subprocess.run([EXE, "run", "examples/digits.toml", "--set", "train.epochs=1", "--set",
                               f"train.lr={lr}", "--wait"], cwd=REPO, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
    term.open("d", EXE)
    term.wait("d", lambda s: s.count("finished") >= 2, "both runs listed", 30)
    term.keys("d", "space", "Down", "space", "c")
    screen = term.wait("d", lambda s: "train.lr" in s, "the compare view", 20)
    assert "model.name" not in screen and "0.05" in screen and "0.1" in screen  # only what differs
    assert "val acc best/final" in screen and "wall time" in screen
    term.keys("d", "a")  # all keys
    term.wait("d", lambda s: "model.name" in s, "every key", 10)
    # (an ESC with a key close behind it reads as alt+key: a terminal's own ambiguity; so one at a time)
    term.keys("d", "Escape")
    term.wait("d", lambda s: "compare 2 runs" not in s, "the dashboard back", 10)
    term.keys("d", "q")
    term.wait("d", lambda s: "keep going" in s or "$" in s, "the console closing", 10, history=True)
