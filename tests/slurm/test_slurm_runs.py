"""Runs as Slurm jobs on a real two-node Slurm: submitted, queued, watched, stopped, killed, resumed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from processes import gone, wait_for
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, events, fill_nodes, in_squeue, launch, row, watch

pytestmark = pytest.mark.slow


def test_the_digits_demo_runs_as_a_job_and_finishes_with_its_accuracy(cluster: Cluster, home: Path) -> None:
    done = cli("run", DIGITS, "--slurm", "--partition", "debug", "--time", "10", "--set", "train.epochs=3",
               "--wait")
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    found = row(run_id)
    assert found["status"] == "finished"
    assert found["last"]["val_acc"] > 0.5  # it learned: ten classes, chance is 0.1
    assert found["slurm"]["job_id"].isdigit() and found["slurm"]["nodes"] in ("n1", "n2")
    script = (home / "runs" / run_id / "slurm.sh").read_text()
    assert "#SBATCH --partition=debug" in script and "#SBATCH --time=10" in script
    assert f"-m trainconsole.trainers {home / 'runs' / run_id}" in script  # the same run process
    assert [e["type"] for e in events(home, run_id)][:2] == ["queued", "started"]


def test_slurm_refusals_are_one_line_in_its_words_and_leave_no_run(cluster: Cluster, home: Path) -> None:
    bad_partition = cli("run", DIGITS, "--partition", "nope")
    assert bad_partition.returncode == 2
    assert bad_partition.stderr.strip().endswith("Invalid partition name specified")
    too_many_gpus = cli("run", DIGITS, "--slurm", "--gpus-per-node", "4")
    assert too_many_gpus.returncode == 2 and "sbatch refused the job" in too_many_gpus.stderr
    no_sbatch = cli("run", DIGITS, "--slurm", env={"PATH": "/nonexistent"})
    assert no_sbatch.returncode == 2 and "no sbatch on the PATH" in no_sbatch.stderr
    bad_time = cli("run", DIGITS, "--slurm", "--time", "soon")
    assert bad_time.returncode == 2 and bad_time.stderr.count("\n") == 1 and "slurm.time" in bad_time.stderr
    # what the cluster cannot give, asked of sbatch --test-only: never a job that waits forever
    three_nodes = cli("run", DIGITS, "--nodes", "3", "--set", 'strategy.name="ddp"')
    assert three_nodes.returncode == 2
    assert three_nodes.stderr.strip().endswith("Requested node configuration is not available")
    signal_late = cli("run", DIGITS, "--time", "1")  # the default signal_s = 120 would stop it at once
    assert signal_late.returncode == 2 and "slurm.signal_s: must be below" in signal_late.stderr
    bogus = cli("run", DIGITS, "--slurm", "--sbatch-arg=--bogus")
    assert bogus.returncode == 2 and "unrecognized option '--bogus'" in bogus.stderr  # sbatch's own line
    for done in (bad_partition, too_many_gpus, no_sbatch, bad_time, three_nodes, signal_late, bogus):
        assert done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr
    assert not list((home / "runs").iterdir())
    assert cluster.jobs() == []


def test_a_run_waits_queued_with_slurms_reason_while_the_nodes_are_busy(cluster: Cluster, home: Path) -> None:
    sleepers = fill_nodes(cluster)
    run_id = launch(DIGITS, "--slurm", "--set", "train.epochs=1")
    waiting = wait_for(lambda: (r := row(run_id))["slurm"]["reason"] in ("Resources", "Priority") and r,
                       60, "Slurm's reason")
    assert waiting["status"] == "queued" and waiting["pid"] is None
    cluster.run("scancel", sleepers[0])  # a node frees: the run starts there
    wait_for(lambda: row(run_id)["status"] == "finished", 120, "the run to finish once a node freed")
    assert row(run_id)["slurm"]["nodes"] in ("n1", "n2")


def test_stop_checkpoints_and_resume_goes_on_as_a_new_job_of_the_same_run(cluster: Cluster,
                                                                          home: Path) -> None:
    run_id = launch(DIGITS, "--slurm", "--set", "train.epochs=500")
    run = home / "runs" / run_id
    wait_for(lambda: (run / "checkpoints" / "last.pt").exists(), 120, "a first checkpoint")
    first_job = row(run_id)["slurm"]["job_id"]
    stopped = cli("stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    assert row(run_id)["status"] == "stopped"
    assert "stopped" in [e["type"] for e in events(home, run_id)]
    epoch = torch.load(run / "checkpoints" / "last.pt", weights_only=True)["epoch"]
    wait_for(lambda: not in_squeue(cluster, first_job), 30, "the stopped job to leave squeue")

    assert cli("resume", run_id).returncode == 0
    wait_for(lambda: row(run_id)["status"] == "running", 60, "the resumed run to run")
    assert row(run_id)["slurm"]["job_id"] != first_job
    wait_for(lambda: any(e["type"] == "eval" and e["epoch"] > epoch + 1 for e in events(home, run_id)), 120,
             "an epoch after the checkpoint's")
    pid = row(run_id)["pid"]
    assert cli("kill", run_id).returncode == 0
    assert row(run_id)["status"] == "killed"
    assert gone([pid]) and not in_squeue(cluster, row(run_id)["slurm"]["job_id"])


def test_kill_of_a_pending_job_takes_it_out_of_the_queue(cluster: Cluster, home: Path) -> None:
    fill_nodes(cluster)
    run_id = launch(DIGITS, "--slurm")
    job_id = wait_for(lambda: row(run_id)["status"] == "queued" and row(run_id)["slurm"]["job_id"], 30,
                      "queued")
    assert in_squeue(cluster, job_id)
    assert cli("kill", run_id).returncode == 0
    assert row(run_id)["status"] == "killed"
    assert not in_squeue(cluster, job_id)


def test_stop_of_a_pending_job_stays_stopped_once_slurm_says_cancelled(cluster: Cluster, home: Path) -> None:
    fill_nodes(cluster)
    run_id = launch(DIGITS, "--slurm")
    job_id = wait_for(lambda: row(run_id)["status"] == "queued" and row(run_id)["slurm"]["job_id"], 30,
                      "queued")
    assert cli("stop", run_id).returncode == 0
    # Slurm ends it CANCELLED, as it would an outside scancel: ours was asked, so it stays `stopped`
    wait_for(lambda: cluster.run("squeue", "-h", "--states=all", "-j", job_id, "-o", "%T").stdout.strip()
             == "CANCELLED", 30, "Slurm to say CANCELLED")
    assert row(run_id)["status"] == "stopped"
    assert [e["type"] for e in events(home, run_id)][-1] == "stopped"


def test_an_outside_scancel_shows_killed_in_slurms_words(cluster: Cluster, home: Path) -> None:
    run_id = launch(DIGITS, "--slurm", "--set", "train.epochs=500")
    wait_for(lambda: row(run_id)["status"] == "running", 60, "running")
    # training, so that Slurm's first SIGTERM meets the run's stop handler (it ends `stopped` by itself)
    wait_for(lambda: (home / "runs" / run_id / "checkpoints" / "last.pt").exists(), 120, "a first checkpoint")
    pid, job_id = row(run_id)["pid"], row(run_id)["slurm"]["job_id"]
    cluster.run("scancel", job_id)
    cancelled = time.monotonic()
    # the run takes Slurm's TERM for a stop and writes `stopped`: never shown, Slurm's word comes instead
    seen = watch(home, run_id, lambda status: status not in ("running", "queued"), 10, "killed within 10 s")
    assert seen == ["running", "killed"] and time.monotonic() - cancelled <= 10
    assert [e["type"] for e in events(home, run_id)][-2:] == ["stopped", "killed"]
    assert "CANCELLED" in row(run_id)["slurm"]["reason"]
    assert gone([pid])
