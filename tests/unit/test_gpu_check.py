"""`make gpu-check` (benchmarks/gpu_check.py): on a machine without a GPU every check says SKIPPED (no GPU),
quickly, and a GPU's report is never overwritten; its devices-pane snapshot renders the real widget."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_check.py"


def gpu_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_without_a_gpu_every_check_is_skipped(tmp_path: Path) -> None:
    if pytest.importorskip("torch").cuda.is_available():
        pytest.skip("this machine has a GPU: make gpu-check runs the real checks")
    out = tmp_path / "GPU.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    # 9 runs, the probe's script, NVML, the pane, the host snapshot
    assert len(skipped) == 13 and all(line.endswith("(no GPU)") for line in skipped)
    assert "| single on cuda:0 | SKIPPED | (no GPU) |" in out.read_text()
    gpu_report = "# GPU check\n\n<!-- gpu-check: cuda -->\n| single on cuda:0 | PASS | ... |\n"
    out.write_text(gpu_report)
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0 and out.read_text() == gpu_report and "keeps its GPU report" in done.stdout


def test_the_devices_pane_snapshot_names_the_run() -> None:
    pytest.importorskip("textual")
    from trainconsole.console.services.gpu import SimulatedGpus

    devices = SimulatedGpus(count=1, runs=["run-1"]).sample({"run-1": {1}})
    text = gpu_check().pane_text(devices, {"run-1": "gpu-nvml"})
    assert "GPU0" in text and "gpu-nvml" in text and "Simulated H100" in text


HIDE_TEXTUAL = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "textual":
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
sys.path.insert(0, "benchmarks")
import gpu_check
from trainconsole.console.services.gpu import SimulatedGpus
devices = SimulatedGpus(count=1, runs=["run-1"]).sample({"run-1": {1}})
result = gpu_check.pane_result("pane", devices, {"run-1": "gpu-nvml"}, "gpu-nvml")
print(result.status, result.figure)
"""


def test_the_devices_pane_draws_without_textual_like_with_it() -> None:
    """A GPU box's python has no Textual: the pane's own render() still draws, the same text."""
    pytest.importorskip("textual")
    from trainconsole.console.services.gpu import SimulatedGpus

    done = subprocess.run([sys.executable, "-c", HIDE_TEXTUAL], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "PASS drawn by its own render(), without Textual" in done.stdout
    devices = SimulatedGpus(count=1, runs=["run-1"]).sample({"run-1": {1}})
    with_textual = gpu_check().pane_text(devices, {"run-1": "gpu-nvml"})
    assert with_textual.strip() and with_textual.strip() in done.stdout
