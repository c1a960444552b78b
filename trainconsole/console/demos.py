"""The example configs and scripts shipped inside the package (`trainconsole/examples/`), so that the
demos exist after a plain `pip install`: `run --demo`, `tune --demo`, `examples DIR`, and the config the
console's form starts from."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: The shipped examples (in the repository, a link to its `examples/`).
FOLDER = Path(__file__).resolve().parents[1] / "examples"
#: The training demo (the digits, a small CNN) and the search demo (random search with ASHA).
RUN_DEMO, TUNE_DEMO = "digits.toml", "tune_digits_random_asha.toml"


def demo(name: str) -> Path:
    """A shipped example config, by file name."""
    return FOLDER / name


def console_demo(cwd: Path | None = None) -> Path:
    """The config the console's form starts from and its load dialog proposes: `examples/digits.toml`
    as typed when that is the shipped one (a checkout's own folder), else the shipped file's full path."""
    here = Path("examples") / RUN_DEMO
    shipped = demo(RUN_DEMO)
    try:
        same = (cwd or Path.cwd()).joinpath(here).resolve() == shipped.resolve()
    except OSError:
        same = False
    return here if same else shipped


def shipped_files() -> list[Path]:
    """Every shipped example, relative to the examples folder (configs, then scripts)."""
    return sorted((p.relative_to(FOLDER) for p in FOLDER.rglob("*")
                   if p.is_file() and p.suffix in (".toml", ".py") and "__pycache__" not in p.parts),
                  key=lambda p: (len(p.parts), str(p)))


def copy_out(dest: Path) -> list[Path]:
    """Copy every shipped example into `dest` (made if missing); FileExistsError, with nothing copied,
    if any of them is there already."""
    files = shipped_files()
    taken = [dest / f for f in files if os.path.lexists(dest / f)]
    if taken:
        raise FileExistsError(str(taken[0]))
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FOLDER / f, dest / f)
    return [dest / f for f in files]
