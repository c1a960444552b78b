"""Fixtures for real trainer runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainconsole.protocol import home as protocol_home


@pytest.fixture
def tc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh TRAINCONSOLE_HOME (with runs/) for this test, inherited by the trainer subprocesses."""
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(tmp_path / "home"))
    return protocol_home()
