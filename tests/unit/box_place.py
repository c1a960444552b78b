"""A place used only by the tests: a run "in a box", to show that a place is one module and one
registration (docs/ARCHITECTURE.md, "To add a place"). The box is a real process of this host started in
a session of its own, whose facts the place keeps under run.json's `box` (a label, its pid)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from trainconsole.control import places as control_places
from trainconsole.protocol import Config, RunDir, processes
from trainconsole.protocol.kills import record_kill


class Box(control_places.Place):
    """Both halves in one class (the control half is a subclass of the readers' `Place`)."""

    name = "box"
    info_key = "box"
    section = "box"

    def alive(self, run_path: str | os.PathLike[str], info: dict[str, Any], now: float | None = None) -> bool:
        return processes.process_alive(info["box"].get("pid"), info.get("pid_started"))

    def row_fields(self, info: dict[str, Any], status: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        return {"label": info["box"]["label"], "pid": info["box"].get("pid")}

    def start(self, run: RunDir, info: dict[str, Any], command: list[str], config: Config | None,
              ran_s: float) -> None:
        label = (config or {}).get("box", {}).get("label") or info.get("box", {}).get("label", "box")
        with open(run.stdout, "ab") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        started = processes.start_time(proc.pid)
        run.write_info({**info, "pid": proc.pid, "pgid": proc.pid, "pid_started": started,
                        "started_at": time.time(), "ended_at": None, "ran_s": ran_s,
                        "box": {"label": label, "pid": proc.pid}})
        self._children = [*getattr(self, "_children", []), proc]

    def stop(self, run: RunDir, status: control_places.Status, grace: float) -> str:
        os.kill(run.read_info()["box"]["pid"], signal.SIGTERM)
        return status(run)

    def kill(self, run: RunDir, status: control_places.Status) -> control_places.Kill:
        with run.lock():
            info = run.read_info()
            was = status(run)
            leader = processes.find(info["box"]["pid"], info.get("pid_started"))
            ended = processes.end_family(leader, info.get("pgid"), info.get("pid_started") or 0.0)
            for child in getattr(self, "_children", []):
                child.poll()
            if not ended.survivors:
                record_kill(run, ended.pids, box=info["box"]["label"])
        return control_places.Kill(was, not ended.survivors, [p.pid for p in ended.survivors])


PLACE = Box()
