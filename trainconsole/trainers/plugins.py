"""User plug-ins: `"package.module:factory"` as a model or dataset name, found from the launch directory."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from trainconsole.protocol.launch import reach_launch_dir


def factory(spec: str) -> Callable[..., Any]:
    """The callable a plug-in spec names; its package is looked up after the installed ones, then in the
    directory the run was launched from (never in front of trainconsole itself)."""
    module, _, attr = spec.partition(":")
    reach_launch_dir()
    return getattr(importlib.import_module(module), attr)
