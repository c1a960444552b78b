"""Shared by the tune benchmarks: run a search through the CLI in a scratch home and read its trials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXE = str(Path(sys.executable).parent / "trainconsole")
DEMO = "examples/tune_digits_random_asha.toml"


@dataclass
class Search:
    """A finished search: its wall time (CLI launch to exit), its events, and its trials' last events."""

    wall_s: float
    events: list[dict[str, Any]]
    trials: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def trial_epochs(self) -> int:
        """Epochs trained over all trials (one iteration is one epoch)."""
        return sum(t["iteration"] for t in self.trials.values())

    @property
    def best_val_acc(self) -> float:
        """The best validation accuracy any trial reached at any epoch."""
        return max(e["metrics"].get("val_acc", 0.0) for e in self.events if e["type"] == "trial")

    def event(self, kind: str) -> dict[str, Any]:
        """The last event of a kind."""
        return next(e for e in reversed(self.events) if e["type"] == kind)


def search(*sets: str, config: str = DEMO) -> Search:
    """`trainconsole tune CONFIG --set ... --wait` in a fresh TRAINCONSOLE_HOME; raises if it fails."""
    with tempfile.TemporaryDirectory(prefix="tc-bench-") as home:
        args = [a for s in sets for a in ("--set", s)]
        began = time.monotonic()
        out = subprocess.run([EXE, "tune", config, *args, "--wait"], capture_output=True, text=True,
                             cwd=REPO, env={**os.environ, "TRAINCONSOLE_HOME": home})
        wall = time.monotonic() - began
        if out.returncode != 0:
            raise RuntimeError(f"search failed: {out.stderr[-2000:]}")
        run_id = out.stdout.split()[0]
        lines = (Path(home) / "runs" / run_id / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    trials = {e["trial_id"]: e for e in events if e["type"] == "trial"}
    return Search(wall, events, trials)


def machine() -> str:
    """One line describing where the figures were taken (and how busy it was)."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")
    return f"{cpu}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
