"""An id longer than a file name may be is no run: one line, exit 2, for every command that takes ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXE = str(Path(sys.executable).parent / "trainconsole")
LONG = "a" * 3000


def test_an_id_too_long_for_a_file_name_is_no_such_run(home: Path) -> None:
    commands = [["logs", LONG], ["kill", LONG], ["stop", LONG], ["rm", LONG], ["note", LONG, "text"],
                ["export", LONG], ["compare", LONG, LONG], ["resume", LONG], ["tag", LONG, "+x"],
                ["trials", LONG], ["restore", LONG]]
    for args in commands:
        out = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, (args[0], out.stderr[-300:])
        assert len(out.stderr.strip().splitlines()) == 1 and "no run" in out.stderr, (args[0], out.stderr)
        assert len(out.stderr) < 300, args[0]
