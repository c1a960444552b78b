"""The headless CLI, driven as a user would: real subprocesses, real training runs."""

from __future__ import annotations

import json
import os
import signal
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


def ls() -> dict[str, dict]:
    out = cli("ls", "--json")
    assert out.returncode == 0, out.stderr
    return {row["id"]: row for row in json.loads(out.stdout)}


def events(home: Path, run_id: str) -> list[dict]:
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def start_long_run(home: Path, *extra: str) -> str:
    out = cli("run", DEMO, "--set", "train.epochs=200", *extra)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.strip()
    wait_for(lambda: any(e["type"] == "step" for e in events(home, run_id)), what="first step")
    return run_id


def test_demo_run_wait_succeeds_with_accuracy(home: Path) -> None:
    out = cli("run", DEMO, "--wait", timeout=180)  # speed is benchmarked, not asserted
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.strip().splitlines()[0]
    row = ls()[run_id]
    assert row["status"] == "finished" and row["last"]["val_acc"] >= 0.90
    assert row["kind"] == "train" and row["strategy"] == "single" and row["ended_at"]
    import torch

    best = home / "runs" / run_id / "checkpoints" / "best.pt"
    ckpt = torch.load(best, map_location="cpu", weights_only=True)
    assert not any(k.startswith("module.") for k in ckpt["model"])


BAD_INPUTS = [
    (["--set", "train.lr=0"], "train.lr"),
    (["--set", "train.batch_size=0"], "train.batch_size"),
    (["--set", "train.epochs=\"x\""], "train.epochs"),
    (["--set", "train.nope=1"], "train.nope"),
    (["--set", "model.name=resnet999"], "model.name"),
    (["--set", "data.name=imagenet"], "data.name"),
    (["--set", "train.optimizer=rmsprop"], "train.optimizer"),
    (["--set", "data.name=\"mnist\"", "--set", "data.root=\"/no/such\""], "data.root"),
    (["--set", "lr=1"], "--set"),
    (["--set", "model.name=\"vit_b_16\"", "--set", "strategy.name=\"model_parallel\""],
     "model.name: vit_b_16 cannot be split into stages"),
]


@pytest.mark.parametrize(("args", "field"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line_and_leaves_nothing(home: Path, args: list[str], field: str) -> None:
    out = cli("run", DEMO, *args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in out.stderr
    assert not list((home / "runs").glob("*")) if (home / "runs").exists() else True


def test_bad_files_exit_2(home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[train\nlr=")
    notckpt = tmp_path / "w.pt"
    notckpt.write_text("hello")
    for args, field in (([str(broken)], f"{broken}: line 1: is not valid TOML"),
                        ([str(tmp_path / "missing.toml")], f"{tmp_path / 'missing.toml'}: file not found"),
                        ([DEMO, "--set", f"model.weights=\"{notckpt}\""], "model.weights")):
        out = cli("run", *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert field in out.stderr
    assert cli("kill", "no-such-run").returncode == 2
    assert cli("frobnicate").returncode == 2
    assert not (home / "runs").exists() or not list((home / "runs").iterdir())


def image_folder(root: Path, per_class: int = 40) -> Path:
    """A tiny real ImageFolder dataset: two classes of 16x16 PNGs (dark and bright)."""
    from PIL import Image

    for label, shade in (("dark", 30), ("bright", 220)):
        (root / label).mkdir(parents=True)
        for i in range(per_class):
            Image.new("RGB", (16, 16), (shade, (shade + i) % 256, shade)).save(root / label / f"{i}.png")
    return root


def test_kill_removes_every_process_within_3s(home: Path, tmp_path: Path) -> None:
    root = image_folder(tmp_path / "images")
    run_id = start_long_run(home, "--set", "data.name=\"imagefolder\"", "--set", f"data.root=\"{root}\"",
                            "--set", "data.num_workers=2", "--set", "train.batch_size=8")
    info = json.loads((home / "runs" / run_id / "run.json").read_text())
    leader = psutil.Process(info["pid"])
    family = [leader, *leader.children(recursive=True)]
    assert len(family) >= 3  # the trainer and its two DataLoader workers
    assert (home / "runs" / run_id / ".reserve").exists()
    began = time.monotonic()
    out = cli("kill", run_id)
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - began < 3
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert ls()[run_id]["status"] == "killed"
    assert events(home, run_id)[-1]["type"] == "killed"
    assert not (home / "runs" / run_id / ".reserve").exists()  # the trainer's disk ballast goes too


def test_stop_checkpoints_and_resume_continues(home: Path) -> None:
    run_id = start_long_run(home)
    out = cli("stop", run_id)
    assert out.returncode == 0 and "stopped" in out.stdout, out.stdout + out.stderr
    run_dir = home / "runs" / run_id
    assert (run_dir / "checkpoints" / "last.pt").exists()
    before = events(home, run_id)
    last_step = max(e["step"] for e in before if e["type"] == "step")
    assert before[-1]["type"] == "stopped" and ls()[run_id]["status"] == "stopped"
    assert cli("resume", run_id).returncode == 0
    wait_for(lambda: len([e for e in events(home, run_id) if e["type"] == "step"]) > len(
        [e for e in before if e["type"] == "step"]) + 2, what="steps after resume")
    after = events(home, run_id)[len(before):]
    assert ls()[run_id]["status"] == "running"
    steps = [e["step"] for e in after if e["type"] == "step"]
    assert steps[0] > last_step and steps == sorted(steps)
    assert cli("kill", run_id).returncode == 0


def test_logs_json_is_the_event_log_verbatim(home: Path) -> None:
    run_id = cli("run", DEMO, "--set", "train.epochs=1", "--wait").stdout.split()[0]
    out = cli("logs", run_id, "--json")
    assert out.returncode == 0
    assert out.stdout == (home / "runs" / run_id / "events.jsonl").read_text()
    text = cli("logs", run_id).stdout
    assert "finished" in text and "eval" in text
    followed = cli("logs", run_id, "--follow", "--json", timeout=10)
    assert followed.stdout == out.stdout
    for args in (["logs", run_id], ["logs", run_id, "--json"], ["ls", "--json"], ["ls"]):
        # `trainconsole logs ID | head`: a reader that stops reading ends the command quietly
        proc = subprocess.Popen([EXE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()  # before the command writes its first byte
        assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b"", args
        proc.stderr.close()


def test_vanished_process_is_lost_and_stale_pid_is_never_signalled(home: Path) -> None:
    run_id = start_long_run(home)
    info_path = home / "runs" / run_id / "run.json"
    info = json.loads(info_path.read_text())
    os.killpg(info["pgid"], signal.SIGKILL)
    wait_for(lambda: ls()[run_id]["status"] == "lost", timeout=10, what="lost status")
    # A recorded pid that now belongs to someone else (here: a sleeping bystander leading its own process
    # group, as a reused pid of a detached run would) must not be touched.
    bystander = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        info.update(pid=bystander.pid, pgid=bystander.pid)
        info_path.write_text(json.dumps(info))
        assert ls()[run_id]["status"] == "lost"
        assert cli("kill", run_id).returncode == 0
        assert bystander.poll() is None
    finally:
        bystander.kill()
