"""How slow a leak the leak watch catches, and how fast: real trainer runs of a plug-in model that keeps
LEAK MB per training step (a tensor appended to a list, no graph: what `total_loss += loss` does to a
GPU run) and takes 0.1 s a step, for several LEAK sizes; and one without a leak (no warning allowed).

Printed per size: the step and seconds into training of the `memory_leak` warning (None: not warned
within MAX_STEPS), and the slope the warning reported. The watch judges a whole-run series (least
squares since the warm-up), so what it needs is growth: `min_growth_mb` (32 MB) at `min_slope_mb`
(0.05 MB per step) or more, with a steady fit.

    .venv/bin/python benchmarks/leak_sensitivity.py [--sizes 0.05,0.1,0.25,0.5,1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
MAX_STEPS, STEP_S = 1200, 0.1

from trainconsole.protocol import RunDir, defaults, dumps, new_run_id, read_all  # noqa: E402

PLUGIN = textwrap.dedent('''
    import os, time
    import torch
    from torch import nn

    KEPT = []
    LEAK_MB = float(os.environ["TC_LEAK_MB"])
    STEP_S = float(os.environ["TC_STEP_S"])

    class Leaky(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.fc = nn.Linear(64, num_classes)

        def forward(self, x):
            if self.training:
                if LEAK_MB:
                    KEPT.append(torch.ones(int(LEAK_MB * 262144)))  # float32: 4 bytes each
                time.sleep(STEP_S)
            return self.fc(x.flatten(1))

    def leaky(config, num_classes, input_shape):
        return Leaky(num_classes)
''')


def one(home: Path, plugins: Path, leak_mb: float) -> dict:
    """Train the leaky model for up to MAX_STEPS; when (step, seconds) the watch warned, and its slope."""
    config = defaults()
    config["model"]["name"] = "tc_leaky:leaky"
    config["data"]["name"] = "digits"
    config["train"].update(epochs=1000, max_steps=MAX_STEPS, batch_size=64, threads=1)
    run = RunDir.create(home, new_run_id(f"leak-{leak_mb}"))
    run.config.write_text(dumps(config))
    run.info_path.write_text(json.dumps({"id": run.id, "name": run.id, "kind": "train"}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(REPO)]), "TC_LEAK_MB": str(leak_mb),
           "TC_STEP_S": str(STEP_S)}
    with open(run.stderr, "ab") as err:
        code = subprocess.run([sys.executable, "-m", "trainconsole.trainers", str(run.path)], stderr=err,
                              stdout=subprocess.DEVNULL, env=env, cwd=REPO, timeout=3600).returncode
    events = read_all(run.events)
    steps = [e for e in events if e["type"] == "step"]
    t0 = steps[0]["t"] if steps else 0.0
    warning = next((e for e in events if e.get("code") == "memory_leak"), None)
    return {"leak_mb_per_step": leak_mb, "exit": code, "last_step": steps[-1]["step"] if steps else None,
            "warned_at_step": warning["step"] if warning else None,
            "warned_after_s": round(warning["t"] - t0, 1) if warning else None,
            "reported_mb_per_step": warning["mb_per_step"] if warning else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,0.02,0.05,0.1,0.25,0.5,1,2",
                        help="MB per step, comma-separated")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, plugins = Path(tmp) / "home", Path(tmp) / "plugins"
        (home / "runs").mkdir(parents=True)
        plugins.mkdir()
        (plugins / "tc_leaky.py").write_text(PLUGIN)
        for size in (float(s) for s in args.sizes.split(",")):
            print(json.dumps(one(home, plugins, size)), flush=True)


if __name__ == "__main__":
    main()
