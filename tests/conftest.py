"""Shared fixtures: every test gets its own TRAINCONSOLE_HOME."""

from __future__ import annotations

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


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty TRAINCONSOLE_HOME for this test (set in the environment, so children see it)."""
    path = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(path))
    return path
