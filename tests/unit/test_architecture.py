"""docs/ARCHITECTURE.md stays true where it can be checked: every path, module and class it names exists,
the import contracts it describes hold (`lint-imports`), and importing the protocol loads no third-party
package (its few lazy imports stay inside the functions that need them)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "trainconsole"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
TICKED = re.compile(r"`([^`\n]+)`")
NAME = re.compile(r"^[A-Za-z_][\w.]*$")


def named_in_doc() -> list[str]:
    """Every backticked token of the map that names a file, a folder, a module member or a class."""
    tokens = [t for t in TICKED.findall(DOC.read_text())
              if "NAME" not in t and not t.endswith((".json", ".jsonl"))]  # (placeholders; a run's files)
    return [t for t in tokens if t.endswith((".py", "/")) or (NAME.match(t) and ("." in t or t[0].isupper()))]


def sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]


def path_exists(token: str) -> bool:
    """A path from the repository root, or the tail of a path under the package (`builtin/`, `loop.py`)."""
    token = token.rstrip("/")
    if (ROOT / token).exists():
        return True
    tail = "/" + token
    return any(str(p).endswith(tail) or str(p.parent).endswith(tail) for p in sources())


def defined(name: str, where: list[Path]) -> bool:
    """Whether `name` is defined (a class, a function, a constant) in one of the files."""
    pattern = re.compile(rf"^\s*(class|def)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*[:=]", re.M)
    return any(pattern.search(p.read_text()) for p in where)


def member_exists(token: str) -> bool:
    """`Class`, `module.member` or `Class.member`: defined where the map says."""
    parts = token.split(".")
    if parts[-1] in ("py", "md", "toml", "tcss", "jsonl", "json", "log"):
        return path_exists(token)
    if len(parts) == 1:
        return defined(token, sources())
    owner, member = parts[-2], parts[-1]
    modules = [p for p in sources() if p.stem == owner]
    if modules:
        return defined(member, modules)
    return defined(owner, sources()) and defined(member, sources())


def test_every_path_module_and_class_the_map_names_exists() -> None:
    tokens = named_in_doc()
    assert len(tokens) > 60  # the map names its rooms: a parser that finds none checks nothing
    missing = [t for t in tokens if not (path_exists(t) if t.endswith((".py", "/")) else member_exists(t))]
    assert missing == []


def test_a_name_the_map_does_not_hold_is_found_missing() -> None:
    """The check itself fails on what does not exist."""
    assert not path_exists("protocol/no_such_room.py")
    assert not member_exists("processes.no_such_function")
    assert not member_exists("NoSuchClass")
    assert path_exists("builtin/") and member_exists("processes.end_family") and member_exists("RunRow")


@pytest.mark.skipif(shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
                    reason="import-linter is a dev extra")
def test_the_import_contracts_hold() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "broken" not in done.stdout.split("Contracts:")[-1].lower().replace("0 broken", "")


def test_importing_the_protocol_loads_no_third_party_package() -> None:
    code = ("import importlib, pkgutil, sys, trainconsole.protocol as p\n"
            "for m in pkgutil.walk_packages(p.__path__, 'trainconsole.protocol.'):\n"
            "    importlib.import_module(m.name)\n"
            "print(sorted(n for n in ('psutil', 'pynvml', 'platformdirs', 'torch', 'textual', 'ray')"
            " if n in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
