"""What the CLI says is true: an empty trash or a filter that matches nothing is not "no runs yet"; an id
prefix that several runs share is ambiguous (naming them), not "no run matches"; a finished search's trial
is not asked to stop; `logs` prints no field with nothing after it; the README's example error is the one
printed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from test_trial_cli import SEARCH, ended_search

from trainconsole.protocol import RunDir

EXE = str(Path(sys.executable).parent / "trainconsole")
README = Path(__file__).resolve().parents[2] / "README.md"
T0 = 1_709_640_000.0


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120)


def failed_run(home: Path, run_id: str, hint: str = "") -> RunDir:
    """An ended run whose failure has a cause and an empty hint (as a script's lost rank writes it)."""
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, run_id)
    run.write_info({"id": run_id, "name": "digits", "kind": "train", "started_at": T0, "ended_at": T0 + 9})
    events = [{"t": T0, "type": "started", "strategy": "single"},
              {"t": T0 + 9, "type": "failed", "cause": "rank 1 exited with code 1", "hint": hint}]
    run.events.write_text("".join(json.dumps({"v": 1, "run": run_id, **e}) + "\n" for e in events))
    return run


def files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_an_empty_trash_and_a_filter_without_match_are_said_as_such(home: Path) -> None:
    failed_run(home, "20240305-101500-digits-0a0a")
    out = cli("ls", "--trash")
    assert (out.returncode, out.stdout.strip()) == (0, "the trash is empty"), out
    out = cli("ls", "--filter", "status:running")
    assert (out.returncode, out.stdout.strip()) == (0, "no run matches the filter 'status:running'"), out
    assert "20240305-101500-digits-0a0a" in cli("ls").stdout


def test_an_id_prefix_that_two_runs_share_is_ambiguous_and_names_them(home: Path) -> None:
    ids = ["20240305-101500-digits-0a0a", "20240305-111500-digits-0b0b"]
    for run_id in ids:
        failed_run(home, run_id)
    out = cli("logs", "20240305")
    assert out.returncode == 2 and out.stdout == "", out
    assert len(out.stderr.splitlines()) == 1 and "ambiguous" in out.stderr, out.stderr
    assert all(run_id in out.stderr for run_id in ids) and "no run matches" not in out.stderr
    out = cli("logs", "0b0b")  # a unique end still finds its run
    assert out.returncode == 0 and "failed" in out.stdout, out
    out = cli("logs", "nothing-like-it")
    assert out.returncode == 2 and "no run matches" in out.stderr, out


def test_stop_trial_on_a_finished_search_refuses_and_writes_nothing(home: Path) -> None:
    run = ended_search(home)
    before = files(run.path)
    out = cli("stop-trial", SEARCH, "1")
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.count("\n") == 1 and "finished" in out.stderr and "asked" not in out.stderr, out.stderr
    assert files(run.path) == before


def test_logs_prints_no_field_with_nothing_after_it(home: Path) -> None:
    failed_run(home, "20240305-101500-digits-0a0a", hint="")
    out = cli("logs", "0a0a")
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "failed" in line)
    assert "cause=rank 1 exited with code 1" in line and not re.search(r"\w=(\s|$)", line), line


def test_the_readmes_example_error_is_the_one_printed(home: Path) -> None:
    block = re.search(r"Invalid input exits with code 2.*?```\n\$ (.+?)\n(.+?)\n```", README.read_text(),
                      re.S)
    assert block, "the README's example of a bad input"
    command, said = block.group(1).split(), block.group(2)
    assert command[0] == "trainconsole"
    out = subprocess.run([EXE, *command[1:]], capture_output=True, text=True, timeout=120,
                         cwd=README.parent)
    assert (out.returncode, out.stderr.strip()) == (2, said), out
