"""A notice when a run ends or warns: the shell command in the run's config (`[notify] command`), else the
one in `TRAINCONSOLE_NOTIFY` (which a run inherits from the console or CLI that launched it), gets the run's
final event, and each trouble it meets on the way (out of memory recovered, a memory leak, a diverging
loss, a full disk: the console's toasts), as one JSON object on stdin. The config's wins: it is this
run's own, the variable every run's. Stdlib only.

A trouble's command runs in a daemon thread of its own, so the training never waits for it.

The command runs after the run has recorded its end (the final event, `ended_at`, the exit code), so it
can change neither the run's status nor its timing; its output goes to the run's own stdout/stderr logs;
one that fails is reported there, and one that outlives `TRAINCONSOLE_NOTIFY_TIMEOUT` seconds (default
10) is killed with its whole process group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any

from trainconsole.protocol import FINAL, ConfigError, RunDir, config, tail

ENV, TIMEOUT_ENV = "TRAINCONSOLE_NOTIFY", "TRAINCONSOLE_NOTIFY_TIMEOUT"
DEFAULT_TIMEOUT_S = 10.0
#: The warnings a notify command hears of (as the console's toasts), besides `oom_recovered` events.
TROUBLES = frozenset({"memory_leak", "diverging", "disk_full"})


def final_event(run: RunDir) -> dict[str, object] | None:
    """The run's last final event (finished, failed, stopped, killed), or None."""
    return next((e for e in reversed(tail(run.events)) if e.get("type") in FINAL), None)


def command_of(run: RunDir) -> str:
    """The run's notify command: its config's `[notify] command`, else TRAINCONSOLE_NOTIFY's ("": none)."""
    try:
        section = config.read(run.config).get("notify")
    except (ConfigError, OSError):  # unreadable now: the variable still holds
        section = None
    own = section.get("command") if isinstance(section, dict) else None
    return (own if isinstance(own, str) and own.strip() else os.environ.get(ENV, "")).strip()


def after_run(run: RunDir) -> None:
    """Call the notify command, if one is set, with the final event; never raises."""
    command = command_of(run)
    event = final_event(run) if command else None
    if not command or event is None:
        return
    _tell(command, event)


class Troubles:
    """The event log's listener (`EventWriter.on_emit`): a trouble's event goes to the run's notify
    command, in a daemon thread, so that a command that is slow or hangs never holds the training."""

    def __init__(self, run: RunDir) -> None:
        self.command = command_of(run)

    def __call__(self, event: dict[str, Any]) -> None:
        kind, code = event.get("type"), event.get("code")
        if self.command and (kind == "oom_recovered" or (kind == "warning" and code in TROUBLES)):
            threading.Thread(target=_tell, args=(self.command, event), name="notify", daemon=True).start()


def _tell(command: str, event: dict[str, Any]) -> None:
    try:
        timeout = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S)
    except ValueError:
        timeout = DEFAULT_TIMEOUT_S
    try:
        call(command, json.dumps(event) + "\n", timeout)
    except Exception as exc:  # a notice must never fail the run that it reports
        print(f"notify: {command!r} could not run: {exc}", file=sys.stderr, flush=True)


def call(command: str, text: str, timeout: float) -> None:
    """Run a shell command in its own process group with `text` on stdin; kill the group on timeout."""
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, start_new_session=True)
    try:
        proc.communicate(text.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        print(f"notify: {command!r} took over {timeout:g} s and was killed", file=sys.stderr, flush=True)
        return
    if proc.returncode:
        print(f"notify: {command!r} exited {proc.returncode}", file=sys.stderr, flush=True)
