"""The watchdog of a run's top process: its heartbeat, and the stop and kill requests other hosts send.

A daemon thread started by every top process (`entry.main`: trainer, script runner, tune driver; the queue
waiter) beside whatever the main thread does, so a run that is stuck in its training step still beats,
still stops and still dies: every `heartbeat.interval_s()` it replaces `heartbeat.json`, and about once a
second it looks for `requests/` (`protocol/run_requests.py`); it also publishes its host's device snapshot
when no other process of the host does (`protocol/device_publish.py`, at most every 2 s). A stop request
becomes the stop signal the run would have got from a console on its own host (its handler checkpoints
and exits); a kill request ends the run's whole process tree on this host as the console's `kill` does,
records `killed`, and then this process. It blocks the stop signals in its own thread, so they always
reach the main thread's handler.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from trainconsole.protocol import RunDir, device_publish, heartbeat, processes, run_requests
from trainconsole.protocol.kills import record_kill
from trainconsole.protocol.places import host as hosts
from trainconsole.protocol.stops import STOP_SIGNALS

#: How often the requests folder is looked at (one failed `scandir` when there are none).
POLL_S = 1.0


def part_of(run: RunDir) -> RunDir:
    """The run this directory trains for: itself, or for another node of a Slurm run across nodes
    (`RUN_DIR/nodes/<rank>/`, whose run.json says `node_of`) that run, so that the node's host publishes
    its devices into the run's home with the node's share named as the run."""
    try:
        node_of = run.read_info().get("node_of")
    except (OSError, ValueError):
        node_of = None
    return RunDir(run.path.parents[1]) if node_of else run


class Watchdog:
    """The heartbeat and request thread of one run's top process."""

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.pid, self.started, self.host = os.getpid(), processes.own_start_time(), hosts.this_host()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="trainconsole-watchdog", daemon=True)
        self.owner = part_of(run)  # whose devices these are: the run, or the Slurm run a node trains for
        self.devices = device_publish.Publisher(self.owner.path.parent.parent, self.host)  # (its home)

    @classmethod
    def start(cls, run: RunDir) -> Watchdog:
        """Beat once now, then keep beating and watching in a daemon thread."""
        dog = cls(run)
        dog._beat()
        dog._register()
        dog._thread.start()
        return dog

    def close(self, ended: bool = True) -> None:
        """Stop the thread; with `ended`, a last heartbeat that says this process is done (another host
        then knows at once), without it the next process in this pid goes on beating (the queue's exec)."""
        self._closing.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * POLL_S)
        if ended:
            self._beat(ended=True)
            self._unregister()
        self.devices.close()  # (an exec would drop it too: the next process takes it again)

    def _watch(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        every = heartbeat.interval_s()
        next_beat = time.monotonic() + every
        while not self._closing.wait(max(0.0, min(POLL_S, next_beat - time.monotonic()))):
            if time.monotonic() >= next_beat:
                self._beat()
                next_beat = time.monotonic() + every
            for action in run_requests.pending(self.run.path, self.pid, self.started):
                if action == run_requests.KILL:
                    self._kill()
                else:
                    run_requests.done(self.run.path, action)
                    os.kill(self.pid, signal.SIGTERM)
            self._publish()

    def _beat(self, ended: bool = False) -> None:
        try:
            beat = heartbeat.Beat(self.host, self.pid, self.started, time.time(), ended)
            heartbeat.write(self.run.path, beat)
        except OSError:  # a full disk: the run goes on; other hosts call it lost after the silence
            pass

    def _register(self) -> None:
        """Say that the run lives on this host, so that its host's device snapshot names its share."""
        try:
            name = str(self.owner.read_info().get("name") or "")
            device_publish.register(self.devices.home, self.host, self.owner.id, self.pid, self.started, name)
        except (OSError, ValueError):  # a full disk: the snapshot shows its share as another's
            pass

    def _unregister(self) -> None:
        """The run has ended here: out of the host's runs, its snapshot (if this process writes it) at
        once without it, and the lock left for the host's next run."""
        try:
            device_publish.unregister(self.devices.home, self.host, self.owner.id)
            if self.devices.holds:
                self.devices.publish()
        except Exception:  # noqa: BLE001 - as in _publish
            pass

    def _publish(self) -> None:
        try:
            self.devices.tick()
        except Exception:  # noqa: BLE001 - a device snapshot never harms the run (a driver error, a full disk)
            pass

    def _kill(self) -> None:
        """End every process of the run on this host, this one last, and record `killed` in between
        (`processes.end_family`: the others frozen first, so the main thread, which watches its children,
        cannot report their deaths as a failure after the `killed` event, and no pid is reused)."""
        pgid = os.getpgrp() if os.getpgrp() == self.pid else None  # only a group we lead is ours
        processes.end_family(processes.find(self.pid, self.started), pgid, self.started,
                             record=self._record_kill, self_last=True)

    def _record_kill(self, pids: list[int]) -> None:
        try:
            with self.run.lock():
                record_kill(self.run, [self.pid, *pids], host=self.host, requested=True)
        except OSError:
            pass
        run_requests.done(self.run.path, run_requests.KILL)
