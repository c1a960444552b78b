"""Shared fixtures: every test gets its own TRAINCONSOLE_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty TRAINCONSOLE_HOME for this test (set in the environment, so children see it)."""
    path = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(path))
    return path
