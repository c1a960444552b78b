"""Shared fixtures: every test gets its own TRAINCONSOLE_HOME."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked `gpu` where torch sees no CUDA device (torch is imported only if one is marked)."""
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if not marked:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device (make gpu-check covers these paths on a GPU box)")
        for item in marked:
            item.add_marker(skip)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every run this session wrote gives one row through the run index and through its whole log (the
    property `tests/unit/test_row_property.py` holds for made-up logs, here over the real ones)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or exitstatus != 0 or os.environ.get("TRAINCONSOLE_SKIP_ROW_CHECK"):
        return
    from row_paths import differences  # (here: a session that wrote no runs imports none of it)

    found = differences(factory.getbasetemp())
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in found:
            reporter.write_line(f"row differs: {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty TRAINCONSOLE_HOME for this test (set in the environment, so children see it)."""
    path = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(path))
    return path
