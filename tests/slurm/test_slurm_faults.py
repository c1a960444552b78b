"""Slurm's faults, provoked for real on the two-node test cluster, told as Slurm tells them: a time limit,
a trainer SIGKILLed (as the kernel's OOM killer does) and settled from `sacct` after squeue forgot its
job, a controller that does not answer (never `lost`, no false `killed`), a node set down, a slurmd
killed (its node failed by Slurm's own timeout), an outside requeue."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from processes import gone, wait_for
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, events, fill_nodes, in_squeue, launch, row, start_now, watch

from trainconsole.protocol import load

pytestmark = pytest.mark.slow


def test_a_time_limit_ends_the_run_killed_in_slurms_words(cluster: Cluster, home: Path) -> None:
    # (epochs enough that the limit comes first: a quiet machine trained 500 in under the minute)
    run_id = launch(DIGITS, "--time", "1", "--set", "slurm.signal_s=0", "--set", "train.epochs=20000")
    wait_for(lambda: row(run_id)["status"] == "running", 60, "running")
    pid = row(run_id)["pid"]
    # (the run takes Slurm's TERM at the limit for a stop: `stopped` a moment, until Slurm says TIMEOUT)
    found = wait_for(lambda: (r := row(run_id))["status"] not in ("running", "queued", "stopped") and r, 240,
                     "the time limit")
    assert found["status"] == "killed", events(home, run_id)[-3:]
    end = events(home, run_id)[-1]
    assert end["type"] == "killed" and end["cause"] == "time limit 00:01:00 reached"
    assert end["slurm_state"] == "TIMEOUT" and "resume" in end["hint"]
    assert found["slurm"]["reason"] == "TIMEOUT: time limit 00:01:00 reached"
    if cluster.accounting:  # sacct's record of the job
        assert end["elapsed"].startswith("00:01:") and end["max_rss"]
    assert gone([pid])

    resumed = cli("resume", run_id, "--time", "3")  # a new limit for the new job, kept in its config
    assert resumed.returncode == 0, resumed.stderr
    assert load(home / "runs" / run_id / "config.toml")["slurm"]["time"] == "3"
    assert "#SBATCH --time=3" in (home / "runs" / run_id / "slurm.sh").read_text()
    again = wait_for(lambda: (r := row(run_id))["status"] == "running" and r["slurm"]["time_left"] and r, 60,
                     "running again")
    job = again["slurm"]  # the job as squeue shows it, in ls --json and in ls
    assert job["partition"] == "debug" and job["time_limit"] == "3:00" and job["nodes"] in ("n1", "n2")
    assert f"{job['job_id']} debug {job['nodes']} limit 3:00 left " in cli("ls").stdout
    assert cli("kill", run_id).returncode == 0


def test_a_sigkilled_trainer_is_settled_from_sacct_after_squeue_forgot_it(cluster: Cluster,
                                                                          home: Path) -> None:
    if not cluster.accounting:
        pytest.skip("the test Slurm has no accounting here (slurmdbd, mariadb-server)")
    run_id = launch(DIGITS, "--slurm", "--set", "train.epochs=500")
    wait_for(lambda: (home / "runs" / run_id / "checkpoints" / "last.pt").exists(), 180, "a first checkpoint")
    pid = row(run_id)["pid"]
    job_id = row(run_id)["slurm"]["job_id"]
    os.kill(pid, signal.SIGKILL)  # what the kernel's OOM killer does: nothing in the run can say why
    # no reader of the run meanwhile: squeue forgets the ended job after MinJobAge (10 s here)
    wait_for(lambda: time.sleep(2) or cluster.run("squeue", "-h", "--states=all", "-j", job_id,
                                                  "-o", "%T").stdout.strip() == "", 200, "squeue to forget")
    found = row(run_id)
    assert found["status"] == "failed", events(home, run_id)[-3:]
    end = events(home, run_id)[-1]
    assert end["slurm_state"] == "FAILED" and end["signal"] == 9
    assert end["cause"].endswith("killed by signal 9 (SIGKILL)") and "OOM killer" in end["hint"]
    assert end["elapsed"] and end["max_rss"]


def test_an_unreachable_controller_is_said_never_guessed(cluster: Cluster, home: Path) -> None:
    training = launch(DIGITS, "--slurm", "--set", "train.epochs=500")
    wait_for(lambda: row(training)["status"] == "running", 60, "running")
    fillers = fill_nodes(cluster)  # one takes the other node, one waits
    waiting = launch(DIGITS, "--slurm", "--set", "train.epochs=1")
    job_id = wait_for(lambda: (r := row(waiting))["status"] == "queued" and r["slurm"]["reason"]
                      in ("Resources", "Priority") and r["slurm"]["job_id"], 60, "queued")
    cluster.stop_controller()
    try:
        # (a reader finds it down once the last answer is older than the poll: 3 s; until then it is used)
        wait_for(lambda: row(waiting)["slurm"]["unreachable_since"] is not None, 30, "a reader finds it down")
        start = time.monotonic()
        found = row(waiting)
        print(f"ls --json with the controller down: {time.monotonic() - start:.2f} s")
        assert found["status"] == "queued" and found["slurm"]["unreachable_since"] is not None
        assert row(training)["status"] == "running"  # as last known: never lost
        assert "Slurm not answering since" in cli("ls").stdout
        for action, run_id in (("kill", waiting), ("stop", waiting), ("stop", training)):
            done = cli(action, run_id)
            assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
            assert "does not answer" in done.stderr and "Traceback" not in done.stderr
        assert [e["type"] for e in events(home, waiting)] == ["queued"]  # nothing recorded
        assert "stopped" not in [e["type"] for e in events(home, training)]
    finally:
        cluster.start_controller()
    wait_for(lambda: row(waiting)["slurm"]["unreachable_since"] is None, 60, "Slurm answering again")
    assert row(waiting)["status"] == "queued" and in_squeue(cluster, job_id)
    assert row(training)["status"] == "running"
    assert cli("kill", training).returncode == 0 and row(training)["status"] == "killed"
    cluster.run("scancel", *fillers)  # the waiting run gets a node: its true end, after the outage
    seen = watch(home, waiting, lambda status: status not in ("running", "queued"), 180, "its end")
    assert seen[-1] == "finished" and "lost" not in seen and "killed" not in seen, seen


def test_an_outside_requeue_waits_queued_then_goes_on(cluster: Cluster, home: Path) -> None:
    run_id = launch(DIGITS, "--set", "slurm.requeue=true", "--set", "train.epochs=500")
    wait_for(lambda: (home / "runs" / run_id / "checkpoints" / "last.pt").exists(), 180, "a first checkpoint")
    job_id = row(run_id)["slurm"]["job_id"]
    assert cluster.run("scontrol", "requeue", job_id).returncode == 0
    # the run takes the requeue's TERM for a stop and writes `stopped`: `running` while Slurm ends the job
    # (its COMPLETING), then `queued` as soon as it waits again; never `stopped` (once, all of BeginTime)
    seen = watch(home, run_id, lambda status: status == "queued", 120, "queued again")
    assert "stopped" not in seen and row(run_id)["slurm"]["reason"] == "requeued (BeginTime)", seen
    # it goes on: the same job runs it again, from its last.pt
    seen += watch(home, run_id, lambda status: start_now(cluster, job_id) or status == "running" and sum(
        e["type"] == "started" for e in events(home, run_id)) == 2, 180, "running again")
    assert "stopped" not in seen and "lost" not in seen, seen
    again = [e for e in events(home, run_id) if e["type"] == "started"][-1]
    assert again["resumed_from_step"] > 0 and row(run_id)["slurm"]["job_id"] == job_id
    assert cli("kill", run_id).returncode == 0


def test_a_node_set_down_under_a_two_node_run_fails_it_naming_the_node(cluster: Cluster,
                                                                       home: Path) -> None:
    run_id = launch(DIGITS, "--nodes", "2", "--set", 'strategy.name="ddp"', "--set", "strategy.devices=1",
                    "--set", "strategy.oversubscribe=true", "--set", "train.epochs=500")
    wait_for(lambda: (home / "runs" / run_id / "checkpoints" / "last.pt").exists(), 240, "a first checkpoint")
    pid = row(run_id)["pid"]
    try:
        assert cluster.run("scontrol", "update", "nodename=n2", "state=down", "reason=test").returncode == 0
        found = wait_for(lambda: (r := row(run_id))["status"] not in ("running", "queued", "stopped") and r,
                         120, "the run to end")
    finally:
        cluster.run("scontrol", "update", "nodename=n2", "state=resume")
    assert found["status"] == "failed", events(home, run_id)[-3:]
    end = events(home, run_id)[-1]
    assert end["slurm_state"] == "NODE_FAIL" and end["cause"] == "node n2 failed"
    assert gone([pid])


def test_a_slurmd_killed_fails_the_run_by_slurms_own_timeout_naming_the_node(cluster: Cluster,
                                                                              home: Path) -> None:
    run_id = launch(DIGITS, "--slurm", "--set", "train.epochs=500")
    found = wait_for(lambda: (r := row(run_id))["status"] == "running" and r["slurm"]["nodes"] and r, 120,
                     "running on a node")
    pid, node = found["pid"], found["slurm"]["nodes"]
    cluster.kill_slurmd(node)  # SIGKILL: its slurmstepd and the run live on, the controller hears nothing
    try:
        # Slurm's own word, after its SlurmdTimeout (20 s here): the node DOWN, the job NODE_FAIL
        seen = watch(home, run_id, lambda status: cluster.node_state(node).startswith("down"), 120,
                     f"Slurm to set {node} down")
    finally:
        cluster.start_slurmd(node)  # as an admin does: Slurm then ends the failed job's processes there
    seen += watch(home, run_id, lambda status: status not in ("running", "queued"), 60, "the run to end")
    assert seen[-1] == "failed" and "lost" not in seen and "stopped" not in seen, seen
    # Slurm's word, written by the first reader that finds the run's process gone (`ls` here)
    found = wait_for(lambda: (r := row(run_id))["slurm"]["reason"] and r, 30, "Slurm's word")
    assert found["status"] == "failed" and found["slurm"]["reason"] == f"NODE_FAIL: node {node} failed"
    end = events(home, run_id)[-1]
    assert end["slurm_state"] == "NODE_FAIL" and end["cause"] == f"node {node} failed", end
    wait_for(lambda: gone([pid]), 30, "the run's process to end")
