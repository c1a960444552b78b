"""`trainconsole tune` refuses a bad search before Ray starts: exit 2, one line naming the field, no run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXE = str(Path(sys.executable).parent / "trainconsole")
DEMO = "examples/tune_digits_random_asha.toml"


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["tune.space={}"], "tune.space"),
        (["tune.search=sobol"], "tune.search"),
        (["tune.space.train.lr={normal=[0, 1]}"], "tune.space.train.lr"),
        (["tune.search=bayesopt"], "tune.space.train.lr"),  # the demo's loguniform lr
        (["tune.space.train.lrate={uniform=[0.01, 0.1]}"], "tune.space.train.lrate"),
        (["tune.space.train.lr={uniform=[0.3, 0.1]}"], "tune.space.train.lr"),
        (["tune.space.train.lr={loguniform=[0, 0.1]}"], "tune.space.train.lr"),
        (["tune.num_samples=0"], "tune.num_samples"),
    ],
)
def test_bad_search_exits_2_with_one_line_and_no_run(home: Path, sets: list[str], field: str) -> None:
    args = [a for s in sets for a in ("--set", s)]
    out = subprocess.run([EXE, "tune", DEMO, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


def test_a_refused_search_never_imports_ray(home: Path) -> None:
    code = ("import sys\nfrom trainconsole.console import cli\n"
            "try:\n    cli.main(['tune', sys.argv[1], '--set', 'tune.num_samples=0'])\n"
            "except SystemExit as e:\n    print(e.code, 'ray' in sys.modules, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, DEMO], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["2", "False", "False"], out.stderr


def test_missing_tune_section_is_named(home: Path) -> None:
    out = subprocess.run([EXE, "tune", "examples/digits.toml"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("trainconsole: error: tune:"), out.stderr


def test_ray_address_goes_to_the_config(home: Path) -> None:
    out = subprocess.run([EXE, "tune", DEMO, "--ray-address", "not an address"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "tune.ray_address" in out.stderr, out.stderr
