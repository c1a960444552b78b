"""The log pane's failure panel says where a script run's probe saw it fail (its step and memory)."""

from __future__ import annotations

from trainconsole.console.widgets.run_log import _failure_panel


def test_the_failure_panel_names_the_step_and_memory_the_probe_measured() -> None:
    failed = {"cause": "torch.OutOfMemoryError: CUDA out of memory", "hint": "lower the batch size",
              "at": "at step 9: cuda:0 7100 MB allocated (peak 7900 MB), RSS 900 MB"}
    text = _failure_panel(failed).renderable.plain  # type: ignore[union-attr]
    assert text.splitlines()[:2] == [failed["cause"], failed["at"]] and "hint: lower" in text


def test_without_a_probe_the_panel_is_as_before() -> None:
    text = _failure_panel({"cause": "KeyError: 'label'"}).renderable.plain  # type: ignore[union-attr]
    assert text == "KeyError: 'label'"
