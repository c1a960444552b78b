"""The run processes: training loop, strategies, script runs. `from trainers import report` for scripts."""

from .scripts.report import report

__all__ = ["report"]
