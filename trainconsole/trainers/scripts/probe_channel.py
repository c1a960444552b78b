"""The probe's channel, read by the runner: one JSON-lines file per process of the script run (stdlib only).

The probe (`inject/_trainconsole_probe.py`) appends whole records to `<folder>/<pid>.jsonl`; `ProbeChannel`
keeps an offset per file and returns the new whole records, oldest first per process. The stamp of a line
is written before the line itself, so reading the channel when the line comes out of the pipe finds it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: Where the runner tells the probe to report (sitecustomize reads the same name).
ENV_CHANNEL = "TRAINCONSOLE_PROBE_DIR"
#: The folder holding our sitecustomize.py: first on the script's PYTHONPATH.
INJECT = Path(__file__).parent / "inject"


def probe_environment(env: dict[str, str], folder: Path) -> dict[str, str]:
    """ENV with the probe on: our folder first on PYTHONPATH, the channel's folder named."""
    folder.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(p for p in (str(INJECT), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, ENV_CHANNEL: str(folder)}


class ProbeChannel:
    """New records from every process's file, as (pid, record)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.offsets: dict[str, int] = {}
        self.rest: dict[str, bytes] = {}

    def read(self) -> list[tuple[int, dict[str, Any]]]:
        """Every whole record written since the last read."""
        found: list[tuple[int, dict[str, Any]]] = []
        try:
            names = [e.name for e in os.scandir(self.folder) if e.name.endswith(".jsonl")]
        except OSError:
            return found
        for name in names:
            pid = int(name.split(".")[0]) if name.split(".")[0].isdigit() else -1
            found.extend((pid, record) for record in self._new(name))
        return found

    def _new(self, name: str) -> list[dict[str, Any]]:
        offset = self.offsets.get(name, 0)
        try:
            with open(self.folder / name, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return []
        self.offsets[name] = offset + len(data)
        *lines, self.rest[name] = (self.rest.get(name, b"") + data).split(b"\n")
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue  # never half a record (one write each): a foreign line
        return records
