"""The dashboard's parts own themselves: widgets import no screen, no screen module imports the dashboard
(so none is typed as it), and the dashboard is one class with no mixins. Read from the source's imports."""

from __future__ import annotations

import ast
from pathlib import Path

from textual.screen import Screen

from trainconsole.console.screens.main_screen import MainScreen

CONSOLE = Path(__file__).resolve().parents[2] / "trainconsole" / "console"


def imported(path: Path) -> set[str]:
    """Every module a file imports (absolute names; relative ones resolved against the console)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            package = ".".join(["trainconsole", "console", *path.parent.relative_to(CONSOLE).parts])
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.level and node.module else node.module or base
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_widgets_import_no_screen() -> None:
    for path in sorted((CONSOLE / "widgets").glob("*.py")):
        screens = {n for n in imported(path) if n.startswith("trainconsole.console.screens")}
        assert not screens, f"{path.name} imports {screens}"


def test_no_screen_module_imports_the_dashboard_and_it_mixes_in_nothing() -> None:
    for path in sorted((CONSOLE / "screens").glob("*.py")):
        if path.name != "main_screen.py":
            assert "trainconsole.console.screens.main_screen" not in imported(path), path.name
    assert MainScreen.__bases__ == (Screen,)
