"""`make gpu-check`: every CUDA path of trainconsole on this machine's GPU(s), printed and written down.

Runs with the python and torch already on the machine (`make gpu-check PYTHON=python3` on a GPU box: no
venv, nothing downloaded); packages it cannot find turn their checks into SKIPPED with the reason. Each
check is a real `python -m trainconsole.trainers RUN_DIR` run (small CNN, synthetic 3x32x32 data, ~40 steps)
and prints
PASS / FAIL / SKIPPED with its figure: single on cuda:0; dp (one GPU: the single-device fallback and its
warning); ddp over nccl (world size = GPU count); model_parallel with a stage per GPU; fp16 with a
GradScaler; bf16; OOM recovery; batch_size = auto; weight histograms; a user's AMP script measured by the
probe (gpu_check_scripts.py); the NVML sampler's per-process reading mapped to the run; the devices pane
drawing it; the host's device snapshot naming the run.
The report goes to docs/GPU.md (`--out`); a machine without a GPU never overwrites a GPU's report.
Exit code: 1 if a check FAILed, else 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout, installed or not
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling module, also when loaded by path

from gpu_check_scripts import check_host_snapshot, check_script_probe  # noqa: E402
from gpu_pane_text import pane_text, pane_text_without_textual  # noqa: E402

from trainconsole.protocol import RunDir, defaults, dumps, new_run_id, read_all  # noqa: E402 (stdlib only)

GPU_MARK = "<!-- gpu-check: cuda -->"
RUN_NEEDS = ("numpy", "psutil")  # what `python -m trainconsole.trainers` imports besides torch and the stdlib
BASE = {"model": {"name": "small_cnn"},
        "data": {"name": "synthetic", "samples": 8192, "shape": [3, 32, 32], "classes": 10},
        "train": {"epochs": 1, "batch_size": 128, "max_steps": 40, "lr": 0.01}}


@dataclass
class Result:
    """One check's outcome: PASS, FAIL or SKIPPED, and the figure (or reason) that goes with it."""

    name: str
    status: str
    figure: str
    snapshot: str = ""  # a text picture that goes with it (the devices pane)


@dataclass
class Run:
    """A finished trainer run: exit code, events, wall seconds."""

    run: RunDir
    code: int
    events: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def first(self, kind: str) -> dict[str, Any]:
        return next((e for e in self.events if e["type"] == kind), {})

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def why(self) -> str:
        """The failure cause, or the end of stderr."""
        failed = self.first("failed")
        err = self.run.stderr.read_text(errors="replace") if self.run.stderr.exists() else ""
        tail = err.strip().splitlines()[-1:]
        return failed.get("cause") or (tail[0] if tail else f"exit code {self.code}")


def installed(module: str) -> bool:
    """Whether `module` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def make_run(name: str, **sections: dict[str, Any]) -> RunDir:
    """A run directory under $TRAINCONSOLE_HOME with BASE + `sections` as its config."""
    config = defaults()
    for section, values in (*BASE.items(), *sections.items()):
        config[section].update(values)
    root = Path(os.environ["TRAINCONSOLE_HOME"])
    (root / "runs").mkdir(exist_ok=True)
    run = RunDir.create(root, new_run_id(name))
    run.config.write_text(dumps(config))
    run.info_path.write_text(json.dumps({"id": run.id, "name": name, "kind": "train"}))
    return run


def start(run: RunDir) -> subprocess.Popen[bytes]:
    """`python -m trainconsole.trainers RUN_DIR` with this python, stdio to the run's files."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    with open(run.stdout, "ab") as out, open(run.stderr, "ab") as err:
        return subprocess.Popen([sys.executable, "-m", "trainconsole.trainers", str(run.path)], stdout=out,
                                stderr=err,
                                cwd=REPO, env=env)


def train(name: str, timeout: float = 300, **sections: dict[str, Any]) -> Run:
    """Run a config to its end."""
    run, t0 = make_run(name, **sections), time.monotonic()
    proc = start(run)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    return Run(run, code, read_all(run.events) if run.events.exists() else [], time.monotonic() - t0)


def speed(r: Run) -> str:
    rates = [e["samples_per_s"] for e in r.all("step")[1:] if e.get("samples_per_s")]
    return f"{statistics.median(rates):,.0f} samples/s" if rates else "no step rate"


def peak_mib(r: Run) -> str:
    peaks = [d.get("peak") or 0 for e in r.all("step") for d in (e.get("mem") or {}).get("devices") or []]
    return f"peak {max(peaks) / 2**20:,.0f} MiB" if peaks else "no device memory reported"


def verdict(name: str, r: Run, problems: list[str], figure: str) -> Result:
    """PASS when the run finished and no expectation failed; else FAIL with the first problem."""
    if r.code != 0 or not r.first("finished"):
        return Result(name, "FAIL", f"run {r.run.id} did not finish: {r.why()}")
    return Result(name, "FAIL", problems[0]) if problems else Result(name, "PASS", figure)


# -- the checks --------------------------------------------------------------------------------------------
def check_single(gpus: int) -> Result:
    r = train("gpu-single", strategy={"name": "single", "accelerator": "cuda"})
    devices = r.first("started").get("devices")
    problems = [] if devices == ["cuda:0"] else [f"started on {devices}, expected ['cuda:0']"]
    return verdict("single on cuda:0", r, problems, f"{devices}, {speed(r)}, {peak_mib(r)}, {r.seconds:.0f}s")


def check_dp(gpus: int) -> Result:
    r = train("gpu-dp", strategy={"name": "dp", "accelerator": "cuda"})
    devices, warnings = r.first("started").get("devices"), [w.get("code") for w in r.all("warning")]
    if gpus == 1:
        ok = devices == ["cuda:0"] and "dp_needs_two_gpus" in warnings
        note = next((w["message"] for w in r.all("warning") if w.get("code") == "dp_needs_two_gpus"), "")
        return verdict("dp with one GPU (fallback warning)", r, [] if ok else [f"devices {devices}, warnings "
                       f"{warnings}"], f"warning: {note}; {speed(r)}")
    want = [f"cuda:{i}" for i in range(gpus)]
    ok = devices == want and "dp_needs_two_gpus" not in warnings
    return verdict(f"dp over {gpus} GPUs", r, [] if ok else [f"devices {devices}, expected {want}"],
                   f"{devices}, {speed(r)}")


def check_ddp(gpus: int) -> Result:
    r = train("gpu-ddp", strategy={"name": "ddp", "accelerator": "cuda"})
    s = r.first("started")
    backend, world = s.get("backend"), s.get("world_size")
    problems = [] if backend == "nccl" and world == gpus else [f"backend {backend}, world size {world}"]
    return verdict(f"ddp over nccl, world size {gpus}", r, problems,
                   f"backend {backend}, {s.get('devices')}, {speed(r)}")


def check_model_parallel(gpus: int) -> Result:
    r = train("gpu-mp", strategy={"name": "model_parallel", "accelerator": "cuda", "micro_batches": 4})
    s = r.first("started")
    want = [f"cuda:{i}" for i in range(gpus)]
    ok = s.get("devices") == want and all(n > 0 for n in s.get("stage_params") or [0])
    return verdict(f"model_parallel, {gpus} stage(s) on the GPUs", r, [] if ok else [f"devices "
                   f"{s.get('devices')}, stage params {s.get('stage_params')}"],
                   f"stages on {s.get('devices')}, params {s.get('stage_params')}, {speed(r)}")


def check_fp16(gpus: int) -> Result:
    import torch

    r = train("gpu-fp16", train={"precision": "fp16"}, strategy={"accelerator": "cuda"})
    problems = [] if r.first("started").get("precision") == "fp16" else ["fell back from fp16"]
    scale = None
    if r.run.last_ckpt.exists():
        scaler = torch.load(r.run.last_ckpt, map_location="cpu", weights_only=True).get("scaler") or {}
        scale = scaler.get("scale")
    if not scale:
        problems.append("the checkpoint holds no GradScaler state")
    losses = [e["loss"] for e in r.all("step")]
    return verdict("fp16 with GradScaler", r, problems, f"scale {scale}, loss {losses[0]:.3f} -> "
                   f"{losses[-1]:.3f}, {speed(r)}" if losses else "no steps")


def check_bf16(gpus: int) -> Result:
    r = train("gpu-bf16", train={"precision": "bf16"}, strategy={"accelerator": "cuda"})
    ok = r.first("started").get("precision") == "bf16"
    return verdict("bf16", r, [] if ok else ["fell back from bf16"], f"{speed(r)}, {peak_mib(r)}")


#: resnet18 at 32x32, batch 2048 under a 1 GiB cap: the whole batch's activations do not fit, a halving does.
CAPPED = {"model": {"name": "resnet18"}, "train": {"batch_size": 2048, "max_steps": 3, "max_memory_mb": 1024},
          "strategy": {"accelerator": "cuda"}}


def check_oom_recovery(gpus: int) -> Result:
    r = train("gpu-oom", model=CAPPED["model"], train={**CAPPED["train"], "memory_history": True},
              strategy=CAPPED["strategy"])
    ooms = r.all("oom_recovered")
    if not ooms:
        return verdict("CUDA OOM recovery under max_memory_mb", r, ["no oom_recovered event"], "")
    last, top = ooms[-1], ooms[0].get("top_allocations") or []
    problems = [p for p, bad in (
        (f"device {last.get('device')}", not str(last.get("device")).startswith("cuda")),
        (f"batch {last.get('batch_size')} not kept", last.get("batch_size") != 2048),
        ("no memory snapshot written", not Path(str(ooms[0].get("snapshot"))).is_file()),
        ("no top allocations in the event", not top)) if bad]
    return verdict("CUDA OOM recovery under max_memory_mb", r, problems,
                   f"{len(ooms)} recoveries, micro-batch {last.get('micro_batch')} x {last.get('accumulate')}"
                   f", largest allocation {top[0] if top else '?'}, {speed(r)}")


def check_auto_batch(gpus: int) -> Result:
    # 256 MiB, not the OOM check's 1 GiB: there resnet18 at 32x32 fits the finder's whole limit (1,024, an
    # eighth of the 8,192 samples) and no trial runs out of memory (the H200, 2026-11-26)
    r = train("gpu-auto-batch", model=CAPPED["model"], strategy=CAPPED["strategy"],
              train={**CAPPED["train"], "batch_size": "auto", "max_memory_mb": 256})
    finder = r.first("started").get("batch_finder") or {}
    trials = finder.get("trials") or []
    problems = [p for p, bad in (
        (f"searched on {finder.get('device')}", not str(finder.get("device")).startswith("cuda")),
        ("no trial ran out of memory", all(ok for _, ok in trials)),
        ("an OOM in the run after the search", bool(r.all("oom_recovered")))) if bad]
    figure = f"batch {finder.get('per_process')}, trials {trials}, {finder.get('seconds')} s"
    return verdict("batch_size = auto on the GPU", r, [f"{p}: {figure}" for p in problems], figure)


def check_histograms(gpus: int) -> Result:
    r = train("gpu-histograms", strategy={"accelerator": "cuda"})
    layers = r.first("histogram").get("layers") or {}
    counts = [sum(entry.get("counts") or []) for entry in layers.values()]
    ok = bool(layers) and all(counts)
    return verdict("weight histogram events from CUDA tensors", r, [] if ok else [f"layers {list(layers)}"],
                   f"{len(layers)} tensors, {sum(counts):,} values")


def check_probe(gpus: int) -> Result:
    status, figure = check_script_probe(Path(os.environ["TRAINCONSOLE_HOME"]))
    return Result("a script's AMP loop measured by the probe", status, figure)


CHECKS: list[tuple[str, Callable[[int], Result]]] = [
    ("single on cuda:0", check_single), ("dp", check_dp), ("ddp over nccl", check_ddp),
    ("model_parallel", check_model_parallel), ("fp16 with GradScaler", check_fp16), ("bf16", check_bf16),
    ("CUDA OOM recovery under max_memory_mb", check_oom_recovery), ("batch_size = auto on the GPU",
                                                                    check_auto_batch),
    ("weight histogram events from CUDA tensors", check_histograms),
    ("a script's AMP loop measured by the probe", check_probe),
]
NVML_CHECKS = ("NVML sampler: per-process memory mapped to the run", "devices pane shows it",
               "host device snapshot from NVML names the run")


# -- NVML and the devices pane -----------------------------------------------------------------------------
def check_nvml_and_pane(gpus: int) -> list[Result]:
    """The sampler's per-process reading of a live run, mapped to that run; then the pane drawing it."""
    names = NVML_CHECKS
    missing = [m for m in ("psutil", "pynvml") if not installed(m)]
    if missing:
        why = f"SKIPPED ({', '.join(missing)} not installed: pip install psutil nvidia-ml-py)"
        return [Result(name, "SKIPPED", why) for name in names]
    sampled, label = sample_live_run()
    if isinstance(sampled, Result):
        return [sampled, *(Result(name, "SKIPPED", "no live run") for name in names[1:])]
    devices, run_id, used, snapshot = sampled
    first = Result(names[0], "PASS", f"run {run_id}: {used / 2**20:,.0f} MiB on GPU0") if used else Result(
        names[0], "FAIL", f"no GPU process of run {run_id} in NVML's list ({devices.note or 'no note'})")
    return [first, pane_result(names[1], devices, {run_id: label}, label), Result(names[2], *snapshot)]


def sample_live_run() -> tuple[Any, str]:
    import psutil

    from trainconsole.console.services.gpu import NvmlSampler, families

    run = make_run("gpu-nvml", train={"epochs": 1000, "max_steps": 0}, strategy={"accelerator": "cuda"})
    proc = start(run)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(e["type"] == "step" for e in read_all(run.events)):
            if proc.poll() is not None:
                return Result("NVML sampler", "FAIL", f"run ended early ({proc.returncode})"), ""
            time.sleep(0.2)
        fams = families({run.id: (proc.pid, psutil.Process(proc.pid).create_time())})
        devices = NvmlSampler().sample(fams)
        used = sum(n for gpu in devices.gpus for rid, n in gpu.by_run if rid == run.id)
        try:
            snapshot = check_host_snapshot(Path(os.environ["TRAINCONSOLE_HOME"]), run.id, proc.pid)
        except Exception as e:  # noqa: BLE001 - a FAIL in the report, the other readings stand
            snapshot = ("FAIL", f"{type(e).__name__}: {e}")
        return (devices, run.id, used, snapshot), "gpu-nvml"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def pane_result(name: str, devices: Any, labels: dict[str, str], label: str) -> Result:
    if not installed("rich"):
        return Result(name, "SKIPPED", "rich is not installed here (the devices pane draws with it): the "
                      "reading above is what it would draw")
    how = "in a headless Textual app" if installed("textual") else "by its own render(), without Textual"
    text = pane_text(devices, labels) if installed("textual") else pane_text_without_textual(devices, labels)
    print(text)
    return Result(name, "PASS" if label in text else "FAIL", f"drawn {how}: {len(text.splitlines())} lines, "
                  f"{'names' if label in text else 'does not name'} the run", snapshot=text)


# -- the machine and the report ----------------------------------------------------------------------------
def machine() -> tuple[int, str]:
    """(GPU count, one line about python/torch/GPUs); count -1 when torch itself is missing."""
    head = f"python {platform.python_version()} ({sys.executable})"
    try:
        import torch
    except ImportError as e:
        return -1, f"{head}; torch cannot be imported ({e})"
    head += f", torch {torch.__version__} (CUDA {torch.version.cuda})"
    if not torch.cuda.is_available():
        return 0, head + ", no CUDA device"
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return len(names), head + f", {len(names)} GPU(s): {', '.join(names)}"


def run_checks(gpus: int) -> list[Result]:
    every = [name for name, _ in CHECKS] + list(NVML_CHECKS)
    if gpus <= 0:
        why = "(no GPU)" if gpus == 0 else "(torch cannot be imported)"
        return [Result(name, "SKIPPED", why) for name in every]
    missing = [m for m in RUN_NEEDS if not installed(m)]
    if missing:  # the trainer itself cannot start: say so once per check instead of failing each run
        why = f"({', '.join(missing)} not installed: the trainer needs it; pip install {' '.join(missing)})"
        return [Result(name, "SKIPPED", why) for name in every]
    results = []
    for name, check in CHECKS:
        try:
            results.append(check(gpus))
        except Exception as e:  # noqa: BLE001 - a broken check is a FAIL in the report, not a crash
            results.append(Result(name, "FAIL", f"{type(e).__name__}: {e}"))
        print(line(results[-1]), flush=True)
    for result in check_nvml_and_pane(gpus):
        results.append(result)
        print(line(result), flush=True)
    return results


def line(r: Result) -> str:
    return f"{r.status:<8} {r.name}: {r.figure}"


def report(about: str, gpus: int, results: list[Result], seconds: float) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    intro = ("No GPU here: every GPU check is SKIPPED. On a GPU box run `make gpu-check PYTHON=python3` (its "
             "own python and CUDA torch) to fill this report in." if gpus <= 0 else
             f"What `make gpu-check` saw on {platform.node()}, in {seconds:.0f} s.")
    rows = [f"| {r.name} | {r.status} | {r.figure.replace('|', '/')} |" for r in results]
    return "\n".join([
        "# GPU check", "", GPU_MARK if gpus > 0 else "<!-- gpu-check: none -->", "",
        f"{when}: {about}.", "", intro, "", "| check | result | figure |", "| --- | --- | --- |", *rows,
        "", "```", *(line(r) for r in results), "```", "",
        *(f"{r.name}:\n\n```\n{r.snapshot.rstrip()}\n```\n" for r in results if r.snapshot),
    ])


def write(path: Path, text: str, gpus: int) -> None:
    if gpus <= 0 and path.exists() and GPU_MARK in path.read_text():
        print(f"{path} keeps its GPU report (this machine has no GPU)")
        return
    path.write_text(text)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "GPU.md"), help="the report (Markdown)")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    gpus, about = machine()
    print(about, flush=True)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as home:
        os.environ["TRAINCONSOLE_HOME"] = home
        results = run_checks(gpus)
    if gpus <= 0:
        print("\n".join(line(r) for r in results))
    write(Path(args.out), report(about, gpus, results, time.monotonic() - t0), gpus)
    return 1 if any(r.status == "FAIL" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
