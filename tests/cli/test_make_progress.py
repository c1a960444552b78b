"""`make run` and `make test` say what they install before pip runs, and pip shows its progress (no
`--quiet` on the long installs: the first `make run` once showed only `python3 -m venv .venv` for 5 min
42 s); the README gives the time and size to expect."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["run", "test"])
def test_each_pip_install_is_announced_and_shows_its_progress(target: str, tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make here")
    venv = tmp_path / "venv"  # (none there: the dry run lists every step of a first install)
    out = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    installs = [i for i, line in enumerate(lines) if " -m pip install " in line]
    assert installs, out.stdout
    for i in installs:
        assert not re.search(r"\s(--quiet|-q+)\b", lines[i]), lines[i]
        said = lines[i - 1]
        assert said.startswith("echo ") and "installing" in said and "GB" in said, said


def test_the_readme_says_how_long_and_how_big_the_first_install_is() -> None:
    text = " ".join((REPO / "README.md").read_text().split())
    assert re.search(r"the first `make run` downloads and installs about [\d.]+ GB .* took \d+ min", text)
