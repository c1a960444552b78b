"""`trainconsole run --script`: an unmodified script becomes a run; its printed metrics become events."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from processes import wait_for
from script_helpers import FIXTURES, alive, cli, events, of_type, start, status, tree

from trainconsole.console.core.run_state import RunState

MNIST = FIXTURES / "mnist_main.py"
PRINTED_LOSS = re.compile(r"Train Epoch: (\d+) .*\tLoss: ([0-9.]+)")


def test_mnist_example_finishes_with_its_printed_losses_as_step_events(home: Path, tmp_path: Path) -> None:
    # --no-measure: what the text readers make of its lines (test_script_probe.py: what the probe measures)
    out = cli("run", "--script", str(MNIST), "--no-measure", "--wait", "--", "--epochs", "2", "--samples",
              "96", "--batch-size", "16", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.splitlines()[0]
    assert status(run_id) == "finished"
    printed = PRINTED_LOSS.findall((home / "runs" / run_id / "stdout.log").read_text())
    assert len(printed) == 6  # 2 epochs x 3 logged batches, as the script printed them
    steps = of_type(home, run_id, "step")
    assert [(e["epoch"], e["loss"]) for e in steps] == [(int(ep), float(loss)) for ep, loss in printed]
    # `[32/96 (33%)]` counts samples; with --batch-size 16, batch 2 of 6 (step 2), and epoch 2 goes on from 6
    assert [e["step"] for e in steps] == [0, 2, 4, 6, 8, 10]
    evals = of_type(home, run_id, "eval")
    assert len(evals) == 2 and all(0 <= e["val_acc"] <= 1 and e["val_loss"] > 0 for e in evals)
    started = of_type(home, run_id, "started")[0]
    assert started["strategy"] == "script" and started["args"][:4] == ["--epochs", "2", "--samples", "96"]
    assert started["epochs"] == 2  # the script's own `--epochs`, the run's epoch total
    board = RunState(run_id)  # what the console's loss plot draws
    for event in events(home, run_id):
        board.apply(event)
    assert list(board.train_loss.ys) == [float(loss) for _, loss in printed] and len(board.val_accs) == 2


def test_raising_script_ends_failed_with_its_cause_and_traceback(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text("import sys\nprint('loss: 1.5')\n"
                      "def load():\n    raise KeyError('no such column: label')\nload()\n")
    run_id = start("--script", str(script), cwd=tmp_path)
    wait_for(lambda: status(run_id) != "running", what="the run to end")
    assert status(run_id) == "failed"
    failed = of_type(home, run_id, "failed")[0]
    assert failed["cause"] == "KeyError: 'no such column: label'"
    assert "raise KeyError" in failed["traceback"] and failed["exit_code"] == 1
    assert "Traceback (most recent call last)" in (home / "runs" / run_id / "stderr.log").read_text()
    assert of_type(home, run_id, "step")[0]["loss"] == 1.5


def test_script_runs_in_the_directory_run_was_called_from(home: Path, tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("0.25")
    script = tmp_path / "sub" / "train.py"
    script.parent.mkdir()
    script.write_text("print('loss:', open('data.txt').read())\n")
    out = cli("run", "--script", "sub/train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert of_type(home, out.stdout.split()[0], "step")[0]["loss"] == 0.25


def test_user_pattern_adds_a_metric(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('it 7 | objective 0.125 | perplexity 3.5')\n")
    pattern = r"objective (?P<loss>\S+) \| perplexity (?P<ppl>\S+)"
    out = cli("run", "--script", str(script), "--pattern", pattern, "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    step = of_type(home, out.stdout.split()[0], "step")[0]
    assert (step["loss"], step["ppl"]) == (0.125, 3.5)


BAD = [
    (["--script", "no_such_script.py"], "script.path"),
    (["--script", str(MNIST), "--nproc", "0"], "--nproc"),
    (["--script", str(MNIST), "--pattern", "loss=(?P<loss>[0-9.]+"], "script.patterns"),
    (["--script", str(MNIST), "--pattern", "loss=[0-9.]+"], "script.patterns"),
    ([], "config"),
    (["--nproc", "2", "examples/digits.toml"], "--nproc"),
]


@pytest.mark.parametrize(("args", "field"), BAD)
def test_bad_input_exits_2_with_one_line_and_creates_nothing(home: Path, args: list[str], field: str) -> None:
    out = cli("run", *args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in out.stderr
    assert out.stdout == ""
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


def test_exit_without_traceback_names_the_code_and_the_last_error_line(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "quit.py"
    script.write_text("import sys\nprint('giving up: no GPU found', file=sys.stderr)\nsys.exit(3)\n")
    out = cli("run", "--script", str(script), "--wait", cwd=tmp_path)
    assert out.returncode == 1
    failed = of_type(home, out.stdout.split()[0], "failed")[0]
    assert failed["cause"] == "the script exited with code 3: giving up: no GPU found"


TENSORBOARD_SCRIPT = """
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter()  # ./runs/<date>_<host>/, TensorBoard's default
for step in range(1, 6):
    writer.add_scalar("Loss/train", 1.0 / step, step)
writer.add_scalar("Accuracy/val", 0.8, 5)
writer.close()
"""


def test_tensorboard_scalars_the_script_writes_become_events(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TENSORBOARD_SCRIPT)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    steps = of_type(home, run_id, "step")
    assert [(e["step"], e["loss"]) for e in steps] == [(s, pytest.approx(1.0 / s)) for s in range(1, 6)]
    assert [(e["step"], e["val_acc"]) for e in of_type(home, run_id, "eval")] == [(5, pytest.approx(0.8))]


def test_script_dies_with_its_runner_and_the_run_is_lost(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "quiet.py"
    script.write_text("import time\nprint('loss: 1.0', flush=True)\ntime.sleep(300)\n")
    run_id = start("--script", str(script), cwd=tmp_path)
    wait_for(lambda: of_type(home, run_id, "step"), what="the script to print")
    runner, *script_procs = tree(home, run_id)
    assert script_procs
    os.kill(runner.pid, signal.SIGKILL)  # the runner alone, as the OOM killer might
    wait_for(lambda: not alive(script_procs), timeout=10, what="the script to die with its runner")
    assert status(run_id) == "lost"


def test_a_config_with_a_script_table_is_a_script_run(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import sys\nprint('objective', sys.argv[1])\n")
    (tmp_path / "script.toml").write_text('[script]\npath = "train.py"\nargs = ["0.75"]\n'
                                          'patterns = ["objective (?P<loss>\\\\S+)"]\n')
    out = cli("run", "script.toml", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    assert of_type(home, run_id, "step")[0]["loss"] == 0.75
    assert of_type(home, run_id, "started")[0]["script"] == str(tmp_path / "train.py")


def test_mnist_example_with_the_probe_has_its_optimizer_steps(home: Path, tmp_path: Path) -> None:
    """The same script with the probe on (the default): each printed loss at the optimizer step it was
    printed after (batch k of epoch e: step 6(e-1)+k+1), the epochs the script's own, 12 steps in all."""
    out = cli("run", "--script", str(MNIST), "--wait", "--", "--epochs", "2", "--samples", "96",
              "--batch-size", "16", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.splitlines()[0]
    stdout = (home / "runs" / run_id / "stdout.log").read_text()
    printed = re.findall(r"Train Epoch: (\d+) \[(\d+)/96 .*\tLoss: ([0-9.]+)", stdout)
    text = [e for e in of_type(home, run_id, "step") if e.get("source") == "text"]
    assert [(e["step"], e["epoch"], e["loss"]) for e in text] == [
        (6 * (int(ep) - 1) + int(seen) // 16 + 1, int(ep), float(loss)) for ep, seen, loss in printed]
    probe = [e for e in of_type(home, run_id, "step") if e.get("source") == "probe"]
    assert probe[-1]["step"] == 12 and probe[-1]["epoch"] == 2
    # epoch 1's test is an evaluation at step 6; epoch 2's comes after the last training step: a result
    assert [e["step"] for e in of_type(home, run_id, "eval")] == [6]
    (result,) = of_type(home, run_id, "result")
    assert result["step"] == 12 and 0 <= result["test_acc"] <= 1


TENSORBOARD_TRAINING = """
import time
import torch
from torch.utils.tensorboard import SummaryWriter

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)
writer = SummaryWriter(flush_secs=1)
for i in range(120):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    writer.add_scalar("Loss/train", loss.item(), global_step=i)  # its own count, from 0
    time.sleep(0.04)
writer.close()
"""


def test_a_tensorboard_loss_beside_the_probe_is_one_series(home: Path, tmp_path: Path) -> None:
    """Issue 35: once the script's own TensorBoard `loss` is read, the probe's step events leave theirs
    out (they counted from 1 where the script's global_step counts from 0: two series one step apart)."""
    (tmp_path / "train.py").write_text(TENSORBOARD_TRAINING)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    steps = of_type(home, out.stdout.split()[0], "step")
    board = [e for e in steps if e.get("source") == "tensorboard"]
    assert [e["step"] for e in board] == list(range(120)) and all("loss" in e for e in board)
    first = board[0]["t"]
    later = [e for e in steps if e.get("source") == "probe" and e["t"] > first]
    assert later and later[-1]["step"] == 120 and all("loss" not in e for e in later)
