"""The notify command: it hears of a run's end, and one that fails or hangs changes nothing of the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
from processes import wait_for

EXE = str(Path(sys.executable).parent / "trainconsole")


def run_with_notify(home: Path, command: str, timeout: str = "10",
                    config_command: str = "") -> tuple[Path, Any]:
    """A one-epoch digits run with TRAINCONSOLE_NOTIFY (and `[notify] command`, if given) set."""
    env = {**os.environ, "TRAINCONSOLE_NOTIFY": command, "TRAINCONSOLE_NOTIFY_TIMEOUT": timeout}
    own = ["--set", f"notify.command={config_command}"] if config_command else []
    out = subprocess.run([EXE, "run", "examples/digits.toml", "--set", "train.epochs=1", *own, "--wait"],
                         capture_output=True, text=True, env=env, timeout=180)
    return home / "runs" / out.stdout.split()[0], out


def final(run: Path) -> dict:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()][-1]


def test_a_failing_command_gets_the_final_event_and_changes_nothing(home: Path, tmp_path: Path) -> None:
    heard = tmp_path / "heard.json"
    run, out = run_with_notify(home, f"cat > {heard}; exit 1")
    assert out.returncode == 0, out.stderr
    wait_for(lambda: "exited 1" in (run / "stderr.log").read_text(), what="the notice's failure logged")
    event = json.loads(heard.read_text())
    assert event["type"] == "finished" and event["run"] == run.name and event == final(run)
    info = json.loads((run / "run.json").read_text())
    assert info["exit_code"] == 0 and info["ended_at"] - event["t"] < 5


def test_a_command_that_hangs_is_killed_and_the_run_is_unchanged(home: Path) -> None:
    run, out = run_with_notify(home, "sleep 1234.5", timeout="4")
    assert out.returncode == 0, out.stderr  # --wait returns at the final event, not at the notice's end
    info = json.loads((run / "run.json").read_text())
    assert final(run)["type"] == "finished" and info["ended_at"] - final(run)["t"] < 2  # not after the notice
    wait_for(lambda: not psutil.pid_exists(info["pid"]) or psutil.Process(info["pid"]).status() == "zombie",
             timeout=30, what="the run's process to exit after the notice's timeout")
    assert "was killed" in (run / "stderr.log").read_text()
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "1234.5"]]
    listed = json.loads(subprocess.run([EXE, "ls", "--json"], capture_output=True, text=True).stdout)
    assert [r["status"] for r in listed] == ["finished"]
    assert json.loads((run / "run.json").read_text()) == info


def test_the_configs_command_beats_the_variable_and_its_failure_changes_nothing(home: Path,
                                                                              tmp_path: Path) -> None:
    heard, other = tmp_path / "heard.json", tmp_path / "variable.json"
    run, out = run_with_notify(home, f"cat > {other}", config_command=f"cat > {heard}; exit 3")
    assert out.returncode == 0, out.stderr
    wait_for(lambda: "exited 3" in (run / "stderr.log").read_text(), what="the notice's failure logged")
    event = json.loads(heard.read_text())
    assert event["type"] == "finished" and event == final(run) and not other.exists()
    assert json.loads((run / "run.json").read_text())["exit_code"] == 0


def test_a_configs_command_that_hangs_is_killed_and_the_run_is_unchanged(home: Path) -> None:
    run, out = run_with_notify(home, "", timeout="4", config_command="sleep 1234.6")
    assert out.returncode == 0, out.stderr
    info = json.loads((run / "run.json").read_text())
    assert final(run)["type"] == "finished" and info["ended_at"] - final(run)["t"] < 2
    wait_for(lambda: "was killed" in (run / "stderr.log").read_text(), timeout=30, what="the notice killed")
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "1234.6"]]
    listed = json.loads(subprocess.run([EXE, "ls", "--json"], capture_output=True, text=True).stdout)
    assert [r["status"] for r in listed] == ["finished"]


def test_a_trouble_on_the_way_is_told_too_and_a_hanging_command_never_holds_the_run(home: Path,
                                                                                    tmp_path: Path) -> None:
    """examples/digits_memory_cap.toml runs out of memory at its first step and recovers: the command hears
    of it while the run trains on, then of its end; a command that hangs holds neither."""
    heard = tmp_path / "heard.jsonl"
    command = f"cat >> {heard}; sleep 1234.7"  # it hangs after each notice, until its timeout
    env = {**os.environ, "TRAINCONSOLE_NOTIFY": command, "TRAINCONSOLE_NOTIFY_TIMEOUT": "6"}
    out = subprocess.run([EXE, "run", "examples/digits_memory_cap.toml", "--set", "train.epochs=1", "--wait"],
                         capture_output=True, text=True, env=env, timeout=240)
    assert out.returncode == 0, out.stderr
    run = home / "runs" / out.stdout.split()[0]
    logged = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    wait_for(lambda: heard.exists() and len(heard.read_text().splitlines()) == 2, timeout=30,
             what="both notices")
    told = [json.loads(line) for line in heard.read_text().splitlines()]
    recovered = next(e for e in logged if e["type"] == "oom_recovered")
    assert told == [recovered, logged[-1]] and logged[-1]["type"] == "finished"
    steps = [e for e in logged if e["type"] == "step"]
    assert steps[-1]["t"] - recovered["t"] > 0 and len(steps) > 1  # it trained on
    assert logged[-1]["t"] - recovered["t"] < 6 or steps[1]["t"] - recovered["t"] < 6  # not held for 6 s
    wait_for(lambda: not [p for p in psutil.process_iter(["cmdline"])
                          if p.info["cmdline"] and "sleep 1234.7" in " ".join(p.info["cmdline"])],
             timeout=30, what="the hanging notices killed")
