"""`from trainconsole.trainers import report`: events under trainconsole (floats from tensors), a no-op
without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from script_helpers import cli, of_type

SCRIPT = """
import time
import torch
from trainconsole.trainers import report

for i in range(1, 301):
    report(step=i, loss=torch.tensor(float(i)), epoch=1 + i // 150)
    time.sleep(0.002)
report(val_acc=torch.tensor(0.75), val_loss=0.5, epoch=2)
print("done")
"""


def test_report_writes_rate_limited_means_and_eval_floats(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    steps = of_type(home, run_id, "step")
    assert sum(e["count"] for e in steps) == 300 and len(steps) < 300  # means, not one event per call
    covered = 0
    for event in steps:  # each event: the mean of the losses reported since the previous one
        reported = range(covered + 1, event["step"] + 1)
        assert event["count"] == len(reported) and event["loss"] == sum(reported) / len(reported)
        assert isinstance(event["loss"], float)
        covered = event["step"]
    assert covered == 300
    evals = of_type(home, run_id, "eval")
    assert [(e["val_acc"], e["val_loss"], e["epoch"]) for e in evals] == [(0.75, 0.5, 2)]


def test_report_is_a_silent_no_op_under_plain_python(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINCONSOLE")}
    code = ("import sys\nfrom trainconsole.trainers import report\nreport(step=1, loss=0.5)\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "False" and out.stderr == ""
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "train.py").write_text(SCRIPT)
    out = subprocess.run([sys.executable, "train.py"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == "done\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


TRAINED = """
import time
import torch
from trainconsole.trainers import report

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)
for i in range(1, 201):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    report(step=i, loss=loss)
    time.sleep(0.003)
"""


def test_a_loss_the_script_reports_itself_is_one_series_with_the_probe_on(home: Path, tmp_path: Path) -> None:
    """Issue 35: the probe measures the same steps; the script's own `loss` stays the only one."""
    (tmp_path / "train.py").write_text(TRAINED)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    steps = of_type(home, out.stdout.split()[0], "step")
    probe = [e for e in steps if e.get("source") == "probe"]
    reported = [e for e in steps if "source" not in e]
    assert probe and reported and probe[-1]["step"] == reported[-1]["step"] == 200
    # measured, but not a second loss; the first record goes once the first iteration is whole (at the
    # second step: a step's record waits for every optimizer of the iteration), before the second report()
    assert probe[0]["step"] in (1, 2) and all("loss" not in e and e["lr"] == 0.05 for e in probe[1:])
    assert all("loss" in e for e in reported)
