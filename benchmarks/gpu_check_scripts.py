"""The GPU checks of a user's own script and of the host's device snapshot (`gpu_check.py` runs them).

- A script run with the probe (issue 35) on CUDA: an unmodified AMP training loop (autocast fp16 and a
  `GradScaler`) started by the script runner; the probe's steps must equal the optimizer steps the script
  counted itself (a step the scaler skipped is no step), its losses must be the unscaled ones the script
  printed, and its memory must be torch's CUDA figures of the script's process.
- The host's device snapshot (issue 37) from real NVML: a live run registered with the publisher, whose
  snapshot must name the run's share of the GPU, with the GPU's temperature, power and processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: A user's AMP loop, knowing nothing of trainconsole; it prints its own counts as JSON last.
AMP_SCRIPT = '''
import json, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 16)
loader = DataLoader(TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,))), batch_size=64,
                    shuffle=True)
steps, skipped, losses = 0, 0, {}
for epoch in range(3):
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(), y.cuda()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < before:  # inf/nan gradients: the scaler skipped the optimizer's step
            skipped += 1
        else:
            steps += 1
            losses[steps] = loss.item()
        if i % 16 == 0:
            print(f"epoch {epoch} batch {i} loss {loss.item():.4f}", flush=True)
print(json.dumps({"steps": steps, "skipped": skipped, "losses": losses,
                  "peak": torch.cuda.max_memory_allocated(0)}), flush=True)
'''


def script_run(home: Path, script: Path) -> tuple[Any, int, list[dict[str, Any]]]:
    """Run `script` as a run of kind script (the probe on) with this python; (run, exit code, events)."""
    from trainconsole.protocol import RunDir, defaults, dumps, new_run_id, read_all

    config = defaults()
    config["script"].update(path=str(script), python=sys.executable, measure=True)
    (home / "runs").mkdir(exist_ok=True)
    run = RunDir.create(home, new_run_id("gpu-script"))
    run.config.write_text(dumps(config))
    run.info_path.write_text(json.dumps({"id": run.id, "name": "gpu-script", "kind": "script"}))
    env = {**os.environ, "TRAINCONSOLE_HOME": str(home),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with open(run.stdout, "ab") as out, open(run.stderr, "ab") as err:
        code = subprocess.run([sys.executable, "-m", "trainconsole.trainers.scripts", str(run.path)],
                              stdout=out, stderr=err, cwd=REPO, env=env, timeout=300).returncode
    return run, code, read_all(run.events) if run.events.exists() else []


def probe_problems(own: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """What the probe's events got wrong against the script's own counts."""
    steps = [e for e in events if e["type"] == "step" and e.get("source") == "probe"]
    if not steps:
        return ["no probe step event"]
    problems = []
    if steps[-1]["step"] != own["steps"]:
        problems.append(f"probe's last step {steps[-1]['step']}, the script made {own['steps']}")
    losses = {int(k): v for k, v in own["losses"].items()}
    off = [(e["step"], e["loss"], losses.get(e["step"])) for e in steps if "loss" in e]
    # the probe's loss is the step's loss summed over its backward calls since the last record, averaged:
    # never the scaled one (x 65,536), so within the range of the script's own losses
    lo, hi = min(losses.values()), max(losses.values())
    bad = [(s, p) for s, p, _ in off if not lo * 0.5 <= p <= hi * 1.5]
    if not off or bad:
        problems.append(f"losses out of the script's range [{lo:.3f}, {hi:.3f}]: {bad[:3] or 'none'}")
    devices = [d for e in steps for d in (e.get("mem") or {}).get("devices") or []]
    if not devices or not all(str(d.get("device", "")).startswith("cuda") for d in devices):
        problems.append(f"no CUDA memory in the probe's events ({devices[:1]})")
    elif max(d["peak"] for d in devices) > own["peak"] * 1.01 + (1 << 20):
        problems.append(f"probe's peak {max(d['peak'] for d in devices)} above the script's {own['peak']}")
    return problems


def check_script_probe(home: Path) -> tuple[str, str]:
    """(status, figure) of the AMP script run under the probe."""
    script = home / "amp_script.py"
    script.write_text(AMP_SCRIPT)
    run, code, events = script_run(home, script)
    out = run.stdout.read_text(errors="replace").strip().splitlines() if run.stdout.exists() else []
    if code != 0 or not out or not out[-1].startswith("{"):
        err = run.stderr.read_text(errors="replace").strip().splitlines()[-1:] if run.stderr.exists() else []
        return "FAIL", f"exit {code}: {(err or out[-1:] or ['no output'])[0]}"
    own = json.loads(out[-1])
    problems = probe_problems(own, events)
    steps = [e for e in events if e["type"] == "step" and e.get("source") == "probe"]
    peak = max(d["peak"] for e in steps for d in (e.get("mem") or {}).get("devices") or [{"peak": 0}])
    figure = (f"{own['steps']} optimizer steps ({own['skipped']} skipped by the scaler), probe's last step "
              f"{steps[-1]['step'] if steps else '-'}, loss {steps[0].get('loss', 0):.3f} -> "
              f"{steps[-1].get('loss', 0):.3f} (script's own {own['losses']['1']:.3f} -> "
              f"{own['losses'][str(own['steps'])]:.3f}), peak {peak / 2**20:.1f} MiB (script's "
              f"{own['peak'] / 2**20:.1f})" if steps else "no probe steps")
    return ("FAIL", f"{problems[0]}; {figure}") if problems else ("PASS", figure)


def check_host_snapshot(home: Path, run_id: str, pid: int) -> tuple[str, str]:
    """(status, figure) of the publisher's snapshot of this host while the run `run_id` trains."""
    import psutil

    from trainconsole.protocol import device_publish

    device_publish.register(home, "gpu-check", run_id, pid, psutil.Process(pid).create_time(), "gpu-nvml")
    publisher = device_publish.Publisher(home, "gpu-check")
    if not publisher.reader.available:
        return "FAIL", "the publisher's NVML is not available"
    t0 = time.perf_counter()
    snap = publisher.snapshot()
    ms = 1000 * (time.perf_counter() - t0)
    share = sum(n for gpu in snap.gpus for rid, n in gpu.by_run if rid == run_id)
    gpu = snap.gpus[0] if snap.gpus else None
    figure = (f"{len(snap.gpus)} GPU(s); GPU0 {gpu.name}, {gpu.used / 2**30:.1f}/{gpu.total / 2**30:.0f} GiB"
              ", "
              f"{gpu.temp} C, {gpu.power} W, {len(gpu.procs)} process(es); the run's share "
              f"{share / 2**20:,.0f} MiB; {ms:.0f} ms a snapshot" if gpu else f"no GPU ({snap.note})")
    ok = gpu is not None and share > 0 and gpu.total > 0 and gpu.procs
    return ("PASS" if ok else "FAIL"), figure
