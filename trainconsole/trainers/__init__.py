"""The run processes: training loop, strategies, script runs. `from trainconsole.trainers import report` for
scripts.

`report` is loaded on first use (PEP 562), so that `import trainconsole.protocol`, which the console
does,
loads nothing of the run processes'.
"""

from __future__ import annotations

from typing import Any

__all__ = ["report"]


def __getattr__(name: str) -> Any:
    if name == "report":
        from .scripts.report import report

        return report
    raise AttributeError(f"module 'trainconsole.trainers' has no attribute {name!r}")
