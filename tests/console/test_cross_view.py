"""Every figure is the same in every view: `ls --json`, the console's rows, `compare --json` and `trials
--json`, over real runs of every kind and ending (a training run, scripts that finished, failed, were
stopped, killed or lost, a queued run, a finished search)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import make_app, settle, until
from processes import wait_for

from trainconsole.console.cli_render import epoch_cell
from trainconsole.console.core.board import row

EXE = str(Path(sys.executable).with_name("trainconsole"))
#: A script that prints its epochs and steps as many do (`Epoch [1/3] Step [4/4] loss: 0.25 samples/s:
#: 1040`, then `val_loss: .. val_acc: ..`), then ends, fails or sleeps as its first argument says.
SCRIPT = """\
import sys, time
for epoch in range(1, 4):
    for step in range(1, 5):
        print(f"Epoch [{epoch}/3] Step [{step}/4] loss: {1 / (epoch * step):.4f} "
              f"samples/s: {1000 + 10 * step}", flush=True)
        time.sleep(0.01)
    print(f"Epoch [{epoch}/3] val_loss: {1 / epoch:.4f} val_acc: {0.5 + epoch / 10:.3f}", flush=True)
    if epoch == 2 and sys.argv[1] != "finish":
        if sys.argv[1] == "fail":
            raise SystemExit("ValueError: the data ran out")
        time.sleep(300)
"""
COLUMNS = {"status": 1, "epoch": 3, "acc": 5, "rate": 6}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def launched(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode in (0, 1), out.stderr  # --wait: 1 for the run that fails
    return out.stdout.split()[0]


def evals(home: Path, run_id: str) -> int:
    path = home / "runs" / run_id / "events.jsonl"
    return path.read_text().count('"type":"eval"') if path.exists() else 0


def ended(home: Path, run_id: str) -> bool:
    """Whether the run has ended, its exit code recorded (as `--wait` waits for)."""
    try:
        return json.loads((home / "runs" / run_id / "run.json").read_text()).get("exit_code") is not None
    except (OSError, ValueError):  # not there yet, or read while it was written
        return False


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A home with one run of each kind and ending; its ids by what they are."""
    base = tmp_path_factory.mktemp("views")
    home, script = base / "home", base / "train.py"
    script.write_text(SCRIPT)
    free = base / "free_mb"
    free.write_text("0")
    old = os.environ.get("TRAINCONSOLE_HOME")
    os.environ["TRAINCONSOLE_HOME"] = str(home)
    try:
        # each run goes on beside the others (a search's Ray starting, a training run): all have ended
        # before any view is read
        ids = {"search": launched(cli("tune", "examples/tune_digits_random_asha.toml", "--set",
                                      "tune.num_samples=2", "--set", "tune.max_t=1")),
               "train": launched(cli("run", "examples/digits.toml", "--set", "train.epochs=2")),
               "finished": launched(cli("run", "--script", str(script), "--", "finish")),
               "failed": launched(cli("run", "--script", str(script), "--", "fail"))}
        for ending in ("stopped", "killed", "lost"):
            ids[ending] = launched(cli("run", "--script", str(script), "--", "sleep"))
        for ending in ("stopped", "killed", "lost"):
            wait_for(lambda i=ids[ending]: evals(home, i) >= 2, 60, f"the {ending} script's second epoch")
        for kind in ("search", "train", "finished", "failed"):
            wait_for(lambda i=ids[kind]: ended(home, i), 240, f"the {kind} run's end")
        assert cli("stop", ids["stopped"], "--grace", "5").returncode == 0
        assert cli("kill", ids["killed"]).returncode == 0
        info = json.loads((home / "runs" / ids["lost"] / "run.json").read_text())
        os.killpg(info["pgid"], signal.SIGKILL)  # gone without a word: lost
        ids["queued"] = launched(cli("run", "examples/digits.toml", "--set", "strategy.queue=true", "--set",
                                     "strategy.min_free_mb=1000",
                                     env={"TRAINCONSOLE_FREE_MB_FILE": str(free)}))
        yield home, ids
        cli("kill", ids["queued"])
    finally:
        if old is None:
            os.environ.pop("TRAINCONSOLE_HOME", None)
        else:
            os.environ["TRAINCONSOLE_HOME"] = old


def ls(home: Path) -> dict[str, dict[str, Any]]:
    out = cli("ls", "--json", env={"TRAINCONSOLE_HOME": str(home)})
    return {r["id"]: r for r in json.loads(out.stdout)}


def fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


async def test_ls_the_console_compare_and_trials_agree_on_every_run(every_kind: tuple[Path, dict[str, str]],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home, ids = every_kind
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    rows = ls(home)
    assert {kind: rows[i]["status"] for kind, i in ids.items()} == {
        "train": "finished", "search": "finished", "finished": "finished", "failed": "failed",
        "stopped": "stopped", "killed": "killed", "lost": "lost", "queued": "queued"}
    plain = [i for kind, i in ids.items() if kind not in ("search", "queued")]
    compared = {r["id"]: r for r in json.loads(cli("compare", *plain, "--json").stdout)["runs"]}
    trials = json.loads(cli("trials", ids["search"], "--json").stdout)
    best = next(t["best"] for t in trials["trials"] if t["trial_id"] == trials["best_trial"])

    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: all(i in app.board.runs for i in ids.values()), 10, "every run read")
        now = app.clock()
        for kind, run_id in ids.items():
            run, last = app.board.runs[run_id], rows[run_id]["last"]
            cells = row(run, now)
            assert cells[COLUMNS["status"]] == rows[run_id]["status"] == run.status, kind
            if kind == "search":  # its row: the trials and the best trial's metric
                assert cells[COLUMNS["acc"]] == fmt(best, ".3g") == fmt(last["val_acc"], ".3g")
                assert cells[COLUMNS["epoch"]] == f"{len(trials['trials'])} tr"
                continue
            assert cells[COLUMNS["epoch"]] == epoch_cell(last), kind
            assert cells[COLUMNS["acc"]] == fmt(last.get("val_acc"), ".3f"), kind
            assert cells[COLUMNS["rate"]] == fmt(last.get("samples_per_s"), ",.0f"), kind
            if run_id in compared:
                facts = compared[run_id]
                assert facts["status"] == run.status and facts["final_val_acc"] == last.get("val_acc"), kind
                assert facts["samples_per_s"] == pytest.approx(last.get("samples_per_s")), kind
                assert facts["wall_s"] == pytest.approx(run.elapsed(now), abs=1.0), kind
    # what each run is, in figures: the scripts' own totals and rates, the trainer's mean rate
    assert {kind: epoch_cell(rows[ids[kind]]["last"]) for kind in ("finished", "failed", "stopped")} == {
        "finished": "3/3", "failed": "2/3", "stopped": "2/3"}
    assert rows[ids["train"]]["last"]["epoch"] == 2 and epoch_cell(rows[ids["train"]]["last"]) == "2/2"
