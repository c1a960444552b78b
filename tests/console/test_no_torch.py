"""The console process never imports torch, torchvision or ray, whatever it shows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, "tests/console")
from pathlib import Path
from conftest import fixture_runs, make_app, settle

async def main():
    app = make_app(fixture_runs(Path(sys.argv[1])))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in ("2", "3", "4", "5", "escape", "down", "space", "b", "question_mark", "escape", "k", "n"):
            await pilot.press(key)
        app.main.frames.draw_frame()
        await pilot.pause()
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchvision", "ray"))
    print(json.dumps({"heavy": heavy, "textual": "textual" in sys.modules, "runs": len(app.board.runs)}))

asyncio.run(main())
"""


def test_console_never_imports_torch_torchvision_or_ray(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "home")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"heavy": [], "textual": True, "runs": 5}


#: Packages and modules the console's first frame does without (they load once the dashboard opens).
NOT_FIRST = ["plotext", "textual_plotext", "pynvml", "secrets", "torch", "tomllib", "psutil",
             "trainconsole.console.core.board", "trainconsole.console.services.tailer",
             "trainconsole.protocol.config", "trainconsole.console.serve.options",
             "trainconsole.console.run_options"]


def first_imports(*modules: str) -> list[str]:
    """Which of NOT_FIRST are imported along with `modules` (and the home's path, which the app reads)."""
    script = (f"import json, sys; import {', '.join(modules)}\n"
              "from trainconsole import protocol; protocol.home()\n"
              f"names = {{p for m in sys.modules for p in (m, m.split('.')[0])}}\n"
              f"print(json.dumps(sorted(names & {set(NOT_FIRST)!r})))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_the_first_frame_imports_no_plot_form_or_nvml() -> None:
    # What `trainconsole` imports before its first frame: the dashboard (plotext, the setup form) and NVML
    # come after it (StartScreen, then TrainConsole.open_dashboard), and so do the board, the tailer, the
    # config schema (a TOML parser) and the commands' options (the console's path skips the parser).
    assert first_imports("trainconsole.console.cli", "trainconsole.console.app") == []
    assert "plotext" in first_imports("trainconsole.console.app",
                                      "trainconsole.console.screens.main_screen")  # the check sees it
    assert {"tomllib", "trainconsole.protocol.config"} <= set(
        first_imports("trainconsole.control"))
    assert "trainconsole.console.core.board" in first_imports("trainconsole.console.app",
                                                              "trainconsole.console.screens.main_screen")
