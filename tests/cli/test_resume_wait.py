"""`resume ID --wait` as `run --wait`: the run's id on stdout, its progress on stderr (the resumed leg only,
not its earlier events again), and exit 0 only once it has finished."""

from __future__ import annotations

from pathlib import Path

from test_cli import DEMO, cli, events


def test_resume_wait_follows_the_resumed_leg_to_its_end(home: Path) -> None:
    out = cli("run", DEMO, "--set", "train.epochs=1", "--wait")
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    logged = events(home, run_id)

    out = cli("resume", run_id, "--epochs", "2", "--wait")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [run_id]
    after = events(home, run_id)[len(logged):]
    assert after and after[-1]["type"] == "finished"  # it returned once the run had ended
    lines = out.stderr.splitlines()
    assert lines[-1] == "run finished", lines
    assert sum(" started " in line for line in lines) == 1, lines  # the resumed leg's start alone
    assert sum(" finished " in line for line in lines) == 1, lines
    assert any(" eval " in line and "epoch=2" in line for line in lines), lines
    assert not any(" eval " in line and "epoch=1 " in line for line in lines), lines
