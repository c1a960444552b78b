"""The log pane's line for an `oom_recovered` event says what the run did, in one line."""

from __future__ import annotations

from trainconsole.console.core.run_state import RunState


def test_oom_recovered_note_names_step_micro_batch_and_kept_batch() -> None:
    run = RunState("r")
    run.apply({"v": 1, "t": 1.0, "run": "r", "type": "started"})
    run.apply({"v": 1, "t": 2.0, "run": "r", "type": "oom_recovered", "micro_batch": 64, "accumulate": 2,
               "batch_size": 256, "step": 3, "device": "cpu", "phase": "other rank", "failed_ranks": [1],
               "cause": "RuntimeError: DefaultCPUAllocator: can't allocate memory",
               "memory": {"rss_mb": 800}})
    note = run.notes[-1]
    assert note.level == "warning" and note.text == (
        "out of memory at step 3 (other rank on cpu, ranks [1]): micro-batch 64 x 2 keeps batch 256")
    # the allocator's words are the cause, never shown under the label "hint"
    assert note.detail.startswith("RuntimeError: DefaultCPUAllocator") and note.hint == ""
