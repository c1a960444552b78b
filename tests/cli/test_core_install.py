"""The core install, as a new user gets it: `pip install trainconsole` into a fresh venv outside the
repository installs one top-level package and no torch, Ray, Optuna, pandas or aiohttp; the CLI, the
console and a script run work there, and what needs an extra says which."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: What the core must not bring (each belongs to an extra).
HEAVY = {"torch", "torchvision", "ray", "optuna", "hyperopt", "bayesian-optimization", "pandas", "scipy",
         "aiohttp", "textual-serve", "tensorboard", "scikit-learn"}

SCRIPT = """
import os, time
os.makedirs("runs", exist_ok=True)
open("runs/events.out.tfevents.1.box", "wb").write(b"\\0" * 64)  # TensorBoard's, unreadable in the core
for step in range(1, 21):
    print(f"step {step}/20 loss {1.0 / step:.4f}")
time.sleep(1.5)  # the TensorBoard tail polls once a second
"""

CONSOLE = """
import asyncio, os, sys
from trainconsole.console.app import TrainConsole

async def main():
    app = TrainConsole()
    async with app.run_test(size=(100, 30)) as pilot:
        for key in ("2", "3", "4", "1", "question_mark", "escape"):
            await pilot.press(key)
            await pilot.pause()
        proposed = app.main.path
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "ray", "aiohttp"))
    # the form's config, which the load dialog (o) proposes, exists after a plain pip install
    print("console ok", heavy, os.path.isfile(proposed))

asyncio.run(main())
"""


def source_copy(dest: Path) -> Path:
    """The repository's sources, without its venv and build leftovers (a build writes into its tree)."""
    shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "build", "dist",
                                                              "*.egg-info", "tests", "benchmarks", ".home"))
    return dest


def wheel(src: Path, out: Path) -> Path:
    """Build the wheel as pip does for a user (its build backend from the package registry)."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w",
                            str(out)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0 and "setuptools" in built.stderr and "No matching distribution" in built.stderr:
        pytest.skip("no package registry here for the build backend (setuptools>=68)")
    assert built.returncode == 0, built.stderr[-2000:]
    return next(out.glob("trainconsole-*.whl"))


def core_requirements(whl: Path) -> tuple[set[str], list[str]]:
    """The wheel's top-level names and its requirements outside every extra."""
    with zipfile.ZipFile(whl) as z:
        tops = {name.split("/")[0] for name in z.namelist() if ".dist-info/" not in name}
        meta = Parser().parsestr(z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode())
    return tops, [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]


def name_of(requirement: str) -> str:
    for stop in "<>=!~[; (":
        requirement = requirement.split(stop)[0]
    return requirement.strip().lower().replace("_", "-")


def core_venv(whl: Path, venv: Path, home: Path) -> dict[str, str]:
    """A fresh venv with the wheel and the core's requirements from the registry; the environment to
    use it in (no other venv active)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "CONDA_PREFIX")}
    env |= {"TRAINCONSOLE_HOME": str(home), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(whl)], capture_output=True,
                               text=True, timeout=600, env=env)
    if installed.returncode != 0:
        pytest.skip(f"no package registry here for the core's requirements: {installed.stderr[-300:]}")
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=json"], capture_output=True,
                            text=True, timeout=60, env=env)
    assert not {name_of(p["name"]) for p in json.loads(listed.stdout)} & HEAVY
    return env


@pytest.mark.slow
def test_a_core_install_has_one_package_no_heavy_parts_and_names_the_extras(tmp_path: Path) -> None:
    whl = wheel(source_copy(tmp_path / "src"), tmp_path / "dist")
    tops, core = core_requirements(whl)
    assert tops == {"trainconsole"}
    assert core and not {name_of(r) for r in core} & HEAVY, core
    assert not any("==" in r for r in core), core
    venv, home, where = tmp_path / "core", tmp_path / "home", tmp_path / "elsewhere"
    where.mkdir()
    env = core_venv(whl, venv, home)

    def tc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "trainconsole"), *args], capture_output=True, text=True,
                              timeout=180, env=env, cwd=where)

    assert tc("--version").stdout.strip() == "trainconsole 0.1.0"
    assert tc("ls").returncode == 0
    (where / "train.py").write_text(SCRIPT)
    ran = tc("run", "--script", "train.py", "--wait")
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.splitlines()[0]
    events = [json.loads(line) for line in (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]
    last = [e for e in events if e["type"] == "step"][-1]
    assert last["step"] == 20 and last["loss"] == 0.05 and events[-1]["type"] == "finished"
    said = [e for e in events if e["type"] == "warning" and e.get("code") == "tensorboard_missing"]
    assert len(said) == 1 and said[0]["hint"] == "pip install 'trainconsole[tensorboard]'", said

    for args, extra in ((["run", "--demo"], "train"), (["tune", "--demo"], "tune"), (["serve"], "serve")):
        out = tc(*args)
        assert out.returncode == 2 and f"pip install 'trainconsole[{extra}]'" in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert len(json.loads(tc("ls", "--json").stdout)) == 1  # nothing launched by the refusals
    copied = tc("examples", "mine")
    assert copied.returncode == 0 and (where / "mine" / "digits.toml").is_file(), copied.stderr
    assert (where / "mine" / "scripts" / "report_train.py").is_file()
    assert tc("examples", "mine").returncode == 2  # nothing overwritten

    console = subprocess.run([str(venv / "bin" / "python"), "-c", CONSOLE], capture_output=True, text=True,
                             timeout=120, env=env, cwd=where)
    assert console.returncode == 0 and "console ok [] True" in console.stdout, console.stderr[-2000:]
