"""Which Python a script run uses, and whether it can run it: asked of the interpreter itself, once, at
launch (the config then records the path, so a resume uses the same one).

The default is the Python of the user's active environment (`$VIRTUAL_ENV`, else `$CONDA_PREFIX`):
activating one is how a user says "my Python is this one", and the script then finds the packages it
imports there. With none active, trainconsole's own Python: `python` on PATH is then usually the
system's, which seldom has torch, while ours runs `report()` and the examples.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

#: What the interpreter is asked: its version, and whether torch is there (found, not imported).
MARK = "trainconsole-probe"
PROBE = ("import sys, importlib.util as u; "
         f"print('{MARK}', sys.version_info[0], sys.version_info[1], u.find_spec('torch') is not None)")
#: How long an interpreter gets to answer.
PROBE_S = 30.0


def default_python(env: Mapping[str, str] = os.environ) -> str:
    """The active virtualenv's or conda environment's python, else the one running trainconsole."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        root = env.get(var)
        if root:
            for name in ("python", "python3"):
                candidate = Path(root) / "bin" / name
                if os.access(candidate, os.X_OK):
                    return str(candidate)
    return sys.executable


def probe(python: str) -> tuple[tuple[int, int], bool] | None:
    """(major, minor) and whether torch is there, or None when `python` does not answer as a Python."""
    try:
        out = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=PROBE_S,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    words = next((line.split() for line in out.stdout.splitlines() if line.startswith(MARK)), [])
    if out.returncode != 0 or len(words) != 4:
        return None
    return (int(words[1]), int(words[2])), words[3] == "True"


def problem(python: str, needs_torch: bool) -> str | None:
    """The one line saying why `python` cannot run this script (None when it can)."""
    found = probe(python)
    if found is None:
        return f"script.python: {python} is not a Python interpreter (it did not run `python -c`)"
    version, torch = found
    if version < (3, 8):
        return f"script.python: {python} is Python {version[0]}.{version[1]}; 3.8 or newer is needed"
    if needs_torch and not torch:
        return (f"script.python: {python} has no torch, which --nproc (torch.distributed.run) needs: "
                "install torch there, or choose another --python")
    return None
