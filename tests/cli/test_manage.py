"""Living with many runs from the CLI: rm/restore/purge, prune, tags and notes, ls --filter.

One real digits run is trained per module; each test works on copies of it in its own home (a copy is a
whole run directory: its events, config, output and checkpoints).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from processes import wait_for

EXE = str(Path(sys.executable).parent / "trainconsole")
DEMO = "examples/digits.toml"


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)


def ls(*extra: str) -> dict[str, dict]:
    out = cli("ls", "--json", *extra)
    assert out.returncode == 0, out.stderr
    return {row["id"]: row for row in json.loads(out.stdout)}


def one_line_error(out: subprocess.CompletedProcess[str], *words: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    for word in words:
        assert word in out.stderr, out.stderr


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real finished digits run (2 epochs): its directory."""
    home = tmp_path_factory.mktemp("template")
    out = subprocess.run([EXE, "run", DEMO, "--set", "train.epochs=2", "--wait"], capture_output=True,
                         text=True, env={**os.environ, "TRAINCONSOLE_HOME": str(home)}, timeout=180)
    assert out.returncode == 0, out.stderr
    return home / "runs" / out.stdout.split()[0]


def copy_run(real: Path, home: Path, n: int, val_acc: float | None = None, lr: float | None = None,
             final: str = "finished") -> str:
    """A copy of the real run under a new id; its last val_acc, lr or final event changed if given."""
    run_id = f"20250101-{n:06d}-small-cnn-digits-{n:04x}"
    dest = home / "runs" / run_id
    shutil.copytree(real, dest)
    info = json.loads((dest / "run.json").read_text())
    (dest / "run.json").write_text(json.dumps({**info, "id": run_id, "pid": None, "pid_started": None}))
    events = [json.loads(line) for line in (dest / "events.jsonl").read_text().splitlines()]
    if val_acc is not None:  # the last eval's, and the final event's copy of it
        next(e for e in reversed(events) if e["type"] == "eval")["val_acc"] = val_acc
        events[-1]["val_acc"] = val_acc
    events[-1]["type"] = final
    (dest / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if lr is not None:
        config = (dest / "config.toml").read_text()
        (dest / "config.toml").write_text(config.replace("lr = 0.05", f"lr = {lr}", 1))
    return run_id


def test_rm_then_restore_gives_back_the_same_run(home: Path, real_run: Path) -> None:
    a, b = copy_run(real_run, home, 1), copy_run(real_run, home, 2)
    assert cli("tag", a, "+baseline").returncode == 0 and cli("note", a, "the first try").returncode == 0
    before = {"row": ls()[a], "logs": cli("logs", a, "--json").stdout,
              "compare": cli("compare", a, b, "--json").stdout}
    assert before["row"]["tags"] == ["baseline"] and before["row"]["note"] == "the first try"

    out = cli("rm", a)
    assert out.returncode == 0 and "trash" in out.stdout, out.stderr
    assert a not in ls() and a in ls("--trash") and not (home / "runs" / a).exists()
    one_line_error(cli("logs", a), a)

    assert cli("restore", a[-4:]).returncode == 0  # a unique suffix, as everywhere
    assert {"row": ls()[a], "logs": cli("logs", a, "--json").stdout,
            "compare": cli("compare", a, b, "--json").stdout} == before
    assert a not in ls("--trash")
    more = str(ls()[a]["last"]["epoch"] + 1)  # a finished run trains on only when asked for more epochs
    assert cli("resume", a, "--epochs", more).returncode == 0  # it resumes from its own last.pt
    wait_for(lambda: ls()[a]["status"] not in ("running", "queued"), what="the resumed run to end")
    assert ls()[a]["status"] == "finished"


def test_rm_of_a_running_run_is_refused_and_leaves_it_running(home: Path, real_run: Path) -> None:
    done = copy_run(real_run, home, 1)
    out = cli("run", DEMO, "--set", "train.epochs=200")
    live = out.stdout.strip()
    wait_for(lambda: ls()[live]["status"] == "running" and ls()[live]["last"].get("step"), what="first step")
    try:
        one_line_error(cli("rm", done, live), live, "running")
        rows = ls()
        assert done in rows and rows[live]["status"] == "running"  # the whole call refused: nothing moved
        assert psutil.pid_exists(rows[live]["pid"])
        one_line_error(cli("prune", live), live, "running")
    finally:
        cli("kill", live)
    assert cli("rm", done, live).returncode == 0 and set(ls()) == set()


def test_purge_for_good_and_by_age(home: Path, real_run: Path) -> None:
    a, b, c = (copy_run(real_run, home, n) for n in (1, 2, 3))
    assert cli("rm", "--purge", a).returncode == 0
    assert a not in ls() and a not in ls("--trash") and not (home / "trash" / a).exists()
    assert cli("rm", b, c).returncode == 0
    record = home / "trash" / b / "trashed.json"
    record.write_text(json.dumps({"trashed_at": time.time() - 40 * 86400}))
    out = cli("purge", "--older-than", "30d")
    assert out.returncode == 0 and b in out.stdout and c not in out.stdout
    assert set(ls("--trash")) == {c}
    assert cli("purge").returncode == 0 and ls("--trash") == {} and ls() == {}
    one_line_error(cli("purge", "--older-than", "30x"), "--older-than", "30x")
    one_line_error(cli("rm"), "id")


def test_prune_keep_best_keeps_the_history_and_refuses_resume(home: Path, real_run: Path) -> None:
    a, b = copy_run(real_run, home, 1), copy_run(real_run, home, 2)
    ckpts = home / "runs" / a / "checkpoints"
    logs, size = cli("logs", a, "--json").stdout, ls()[a]["size"]
    dry = cli("prune", a, "--dry-run")
    assert dry.returncode == 0 and "would free" in dry.stdout and (ckpts / "last.pt").exists()
    assert cli("prune", "--status", "failed").stdout.startswith("0 runs")  # both finished: nothing to do
    out = cli("prune", a, "--keep", "best")
    assert out.returncode == 0 and f"{a} freed" in out.stdout, out.stderr
    assert not (ckpts / "last.pt").exists() and (ckpts / "best.pt").exists()
    assert (home / "runs" / b / "checkpoints" / "last.pt").exists()  # only the named run
    assert cli("logs", a, "--json").stdout == logs
    assert cli("compare", a, b, "--json").returncode == 0
    row = ls()[a]
    assert row["status"] == "finished" and row["size"] < size and row["last"]["val_acc"] > 0.5
    one_line_error(cli("resume", a), a, "last.pt", "pruned")
    assert cli("prune", "--keep", "none").returncode == 0 and not any(ckpts.iterdir())


def test_two_tag_calls_at_once_both_land(home: Path, real_run: Path) -> None:
    a = copy_run(real_run, home, 1)
    procs = [subprocess.Popen([EXE, "tag", a, f"+t{i}"], stdout=subprocess.DEVNULL) for i in range(6)]
    assert [p.wait(60) for p in procs] == [0] * 6
    assert ls()[a]["tags"] == [f"t{i}" for i in range(6)]
    assert cli("tag", a, "-t0", "-t1", "+best").returncode == 0
    assert ls()[a]["tags"] == ["best", "t2", "t3", "t4", "t5"]
    report = json.loads(cli("compare", a, copy_run(real_run, home, 2), "--json").stdout)
    assert report["runs"][0]["tags"] == ["best", "t2", "t3", "t4", "t5"] and report["runs"][1]["tags"] == []
    one_line_error(cli("tag", a, "baseline"), "+NAME")
    one_line_error(cli("tag", a, "+two words"), "tag")


def test_ls_filter_lists_exactly_the_matching_runs(home: Path, real_run: Path) -> None:
    runs = {
        "in": copy_run(real_run, home, 1, val_acc=0.95, lr=0.05),
        "edge-in": copy_run(real_run, home, 2, val_acc=0.9001, lr=0.0999),
        "acc-on-bound": copy_run(real_run, home, 3, val_acc=0.9, lr=0.05),
        "lr-on-bound": copy_run(real_run, home, 4, val_acc=0.95, lr=0.1),
        "failed": copy_run(real_run, home, 5, val_acc=0.95, lr=0.05, final="failed"),
    }
    assert set(ls("--filter", "status:finished val_acc>0.9 lr<0.1")) == {runs["in"], runs["edge-in"]}
    assert set(ls("--filter", "status:failed")) == {runs["failed"]}
    assert cli("rm", "--filter", "status:failed").returncode == 0  # rm takes the same filter
    assert set(ls("--trash")) == {runs["failed"]} and len(ls()) == 4
    one_line_error(cli("ls", "--filter", "val_acc>high"), "val_acc>high")
    one_line_error(cli("ls", "--filter", "colour:red"), "colour:red")


def test_export_and_ls_csv(home: Path, real_run: Path) -> None:
    import csv

    a, b = copy_run(real_run, home, 1), copy_run(real_run, home, 2)
    assert cli("tag", a, "+baseline").returncode == 0
    logged = [json.loads(line) for line in (home / "runs" / a / "events.jsonl").read_text().splitlines()]
    steps = [e for e in logged if e["type"] == "step"]
    evals = [e for e in logged if e["type"] == "eval"]

    out = cli("export", a, b)
    rows = list(csv.DictReader(out.stdout.splitlines()))
    assert out.returncode == 0 and len(rows) == 2 * len(steps)
    mine = [r for r in rows if r["run"] == a]
    assert [float(r["loss"]) for r in mine] == [e["loss"] for e in steps] and mine[0]["tags"] == "baseline"
    assert {r["tags"] for r in rows if r["run"] == b} == {""} and int(mine[0]["host_rss"]) > 0

    lines = cli("export", a, "--json", "--every", "epoch").stdout.splitlines()
    per_epoch = [json.loads(line) for line in lines]
    assert [r["val_acc"] for r in per_epoch] == [e["val_acc"] for e in evals]
    assert [r["epoch"] for r in per_epoch] == [e["epoch"] for e in evals]
    piped = subprocess.run(f"{EXE} export {a} {b} | head -1", shell=True, capture_output=True, text=True)
    assert piped.stdout.startswith("run,tags,step") and "Traceback" not in piped.stderr

    table = list(csv.DictReader(cli("ls", "--csv").stdout.splitlines()))
    assert [r["id"] for r in table] == [a, b] and table[0]["tags"] == "baseline"
    assert table[0]["status"] == "finished" and float(table[0]["val_acc"]) == evals[-1]["val_acc"]
    one_line_error(cli("export", a, "--csv", "--json"), "--json")


def test_stop_and_kill_take_several_ids(home: Path, real_run: Path) -> None:
    done = copy_run(real_run, home, 1)
    live = [cli("run", DEMO, "--set", "train.epochs=200").stdout.strip() for _ in range(2)]
    wait_for(lambda: all(ls()[r]["status"] == "running" for r in live), what="both runs running")
    out = cli("kill", *live)
    assert out.returncode == 0 and all(f"{r} killed" in out.stdout for r in live), out.stderr
    assert [ls()[r]["status"] for r in live] == ["killed", "killed"]
    out = cli("stop", done, live[0], "--grace", "1")
    assert out.returncode == 0 and out.stdout.count("(was not running)") == 2


def test_stop_and_kill_take_a_filter(home: Path) -> None:
    live = [cli("run", DEMO, "--set", "train.epochs=200").stdout.strip() for _ in range(2)]
    wait_for(lambda: all(ls()[r]["status"] == "running" for r in live), what="both runs running")
    assert cli("tag", live[0], "+doomed").returncode == 0
    out = cli("kill", "--filter", "tag:doomed status:running")
    assert out.returncode == 0 and out.stdout.strip() == f"{live[0]} killed", (out.stdout, out.stderr)
    assert [ls()[r]["status"] for r in live] == ["killed", "running"]
    one_line_error(cli("stop", "--filter", "colour:red"), "colour")
    out = cli("kill", "--filter", "tag:nothing-has-this")
    assert out.returncode == 0 and not out.stdout and "no run matches" in out.stderr, out.stderr
    out = cli("stop", live[1], "--filter", "status:running", "--grace", "5")
    assert out.returncode == 0 and out.stdout.startswith(f"{live[1]} "), (out.stdout, out.stderr)
    assert ls()[live[1]]["status"] in ("stopped", "killed")
