"""No false leak alarm on any example: every training example, run as a real trainer for as many steps
as the leak watch may take to catch a slow leak (600: issue 15's 0.5 MB per step is warned before it).

Each example config from `examples/` (not the tune ones) gets `train.max_steps = 600` and enough epochs
to reach it; the two halves of the two-node example run together. Printed per example: exit code, step
events, the last step, host RSS range over the step events (MB), out-of-memory recoveries, and any
`memory_leak` warning (there must be none). resnet18 examples take about a minute each on 2 cores.
Run: `.venv/bin/python benchmarks/leak_check.py [EXAMPLE.toml ...]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
STEPS = 600  # a 0.5 MB-per-step leak at 0.1 s per step is warned before this step

from trainconsole.protocol import RunDir, dumps, new_run_id, read_all, validate  # noqa: E402


def config_for(name: str, weights: Path) -> dict:
    raw = tomllib.loads((REPO / "examples" / name).read_text())
    raw["train"].update(epochs=1000, max_steps=STEPS)
    if raw["model"].get("weights"):  # the transfer example: random "pretrained" weights, made locally
        raw["model"]["weights"] = str(weights)
    return validate(raw)


def start(home: Path, name: str, weights: Path) -> tuple[RunDir, subprocess.Popen[bytes]]:
    run = RunDir.create(home, new_run_id(name.removesuffix(".toml")))
    run.config.write_text(dumps(config_for(name, weights)))
    run.info_path.write_text(json.dumps({"id": run.id, "name": name, "kind": "train"}))
    with open(run.stdout, "ab") as out, open(run.stderr, "ab") as err:
        proc = subprocess.Popen([sys.executable, "-m", "trainconsole.trainers", str(run.path)], stdout=out,
                                stderr=err,
                                cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    return run, proc


def report(name: str, run: RunDir, code: int, seconds: float) -> dict:
    events = read_all(run.events)
    steps = [e for e in events if e["type"] == "step"]
    rss = [s["mem"].get("rss", 0) / 2**20 for s in steps]
    return {"example": name, "exit": code, "step_events": len(steps),
            "last_step": steps[-1]["step"] if steps else None,
            "rss_mb": [round(min(rss)), round(max(rss))] if rss else None,
            "oom_recovered": sum(e["type"] == "oom_recovered" for e in events),
            "leak_warnings": [e for e in events if e.get("code") == "memory_leak"], "s": round(seconds)}


def main() -> None:
    import torch
    import torchvision

    names = sys.argv[1:] or sorted(p.name for p in (REPO / "examples").glob("*.toml")
                                   if not p.name.startswith("tune_"))
    groups: dict[str, list[str]] = {}
    for name in names:  # the two nodes of one job run together
        groups.setdefault("2nodes" if "2nodes" in name else name, []).append(name)
    with tempfile.TemporaryDirectory() as tmp:
        home, weights = Path(tmp), Path(tmp) / "resnet18_weights.pt"
        (home / "runs").mkdir()
        torch.save(torchvision.models.resnet18(weights=None).state_dict(), weights)
        for group in groups.values():
            began = time.monotonic()
            started = [(name, *start(home, name, weights)) for name in group]
            for name, run, proc in started:
                print(json.dumps(report(name, run, proc.wait(timeout=1800), time.monotonic() - began)),
                      flush=True)


if __name__ == "__main__":
    main()
