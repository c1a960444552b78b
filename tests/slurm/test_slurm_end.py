"""Slurm's end states in its own words, read from what `sacct -n -P` prints (no cluster needed)."""

from __future__ import annotations

import time

from trainconsole.protocol.places import slurm_end

TIMEOUT = """7|TIMEOUT|0:0|00:01:21||n1|None|00:01:00|2026-11-28T04:10:00
7.batch|CANCELLED|0:15|00:01:22|187340K|n1|||
7.extern|COMPLETED|0:0|00:01:21|0|n1|||
"""
KILLED_BY_SIGNAL = """9|FAILED|0:9|00:00:31||n2|NonZeroExitCode|00:10:00|2026-11-28T04:10:00
9.batch|FAILED|0:9|00:00:31|1.20G|n2|||
"""
CANCELLED = "11|CANCELLED by 0|0:0|00:00:07||n1|None|UNLIMITED|2026-11-28T04:10:00\n"
OOM = """12|OUT_OF_MEMORY|0:125|00:00:05||n1|OutOfMemory|00:10:00|2026-11-28T04:10:00
12.batch|OUT_OF_MEMORY|0:125|00:00:05|512000K|n1|||
"""


def test_each_end_state_is_told_in_slurms_words_with_its_record() -> None:
    timeout = slurm_end.parse_sacct("7", TIMEOUT)
    assert timeout is not None and slurm_end.status_of(timeout.state) == "killed"
    assert slurm_end.cause(timeout) == "time limit 00:01:00 reached"
    assert timeout.record() == {"slurm_state": "TIMEOUT", "exit_code": 0, "signal": 15, "elapsed": "00:01:21",
                                "max_rss": "187340K", "job_id": "7"}
    signalled = slurm_end.parse_sacct("9", KILLED_BY_SIGNAL)
    assert signalled is not None and slurm_end.status_of(signalled.state) == "failed"
    assert slurm_end.cause(signalled).endswith("killed by signal 9 (SIGKILL)")
    assert "OOM killer" in slurm_end.hint(signalled) and signalled.max_rss == "1.20G"
    cancelled = slurm_end.parse_sacct("11", CANCELLED)
    assert cancelled is not None and cancelled.state == "CANCELLED"
    assert slurm_end.cause(cancelled) == "cancelled by root (scancel)"
    oom = slurm_end.parse_sacct("12", OOM)
    assert oom is not None
    assert slurm_end.cause(oom) == "out of memory: Slurm killed step 12.batch (OUT_OF_MEMORY)"
    node_fail = slurm_end.parse_sacct("3", "3|NODE_FAIL|0:0|00:00:40||n[1-2]|None|10|2026-11-28T04:10:00\n")
    assert node_fail is not None and slurm_end.cause(node_fail, "n2") == "node n2 failed"
    assert slurm_end.parse_sacct("8", TIMEOUT) is None


def test_a_stop_by_slurms_time_limit_signal_says_so_and_a_stop_of_ours_does_not() -> None:
    from trainconsole.protocol.places.slurm import row_fields

    now = time.time()
    info = {"started_at": now - 560, "ended_at": now,
            "slurm": {"job_id": "7", "time": "10", "signal_s": 60, "partition": "debug"}}
    stopped = [{"type": "started", "t": now - 559}, {"type": "stopped", "t": now}]
    assert row_fields(info, "stopped", stopped)["reason"] == "time limit near"  # --signal=B:TERM@60
    ours = {**info, "slurm": {**info["slurm"], "stop_asked_at": now - 1}}
    assert row_fields(ours, "stopped", stopped)["reason"] is None
    early = {**info, "started_at": now - 60}  # stopped a minute in: not the limit's signal
    assert row_fields(early, "stopped", stopped)["reason"] is None


def test_the_log_pane_names_the_job_with_its_limit_as_squeue_writes_it() -> None:
    from trainconsole.console.core.board import slurm_job
    from trainconsole.protocol.slurm_config import as_squeue

    assert [as_squeue(t) for t in ("10", "90", "1:30", "2:00:00", "2-12", "UNLIMITED", "")] == \
        ["10:00", "1:30:00", "1:30", "2:00:00", "2-12:00:00", "UNLIMITED", ""]
    job = {"job_id": "7", "partition": "debug", "nodes": "n[1-2]", "time": "90"}
    assert slurm_job(job) == " · Slurm job 7, debug, n[1-2], limit 1:30:00"
    assert slurm_job({"job_id": "8", "partition": "", "nodes": "", "time": ""}) == " · Slurm job 8"
    assert slurm_job({}) == ""  # not a Slurm run
