"""Does an ended trial give its memory back? Seen where the next trial starts in the same worker.

A Ray worker is reused trial after trial (`tune.reuse_actors`, the default). Each trial reports what the
worker held when it began, before its model was built (`start_mem`: host RSS and CUDA bytes allocated,
after the last trial's `memory_cap.give_back`). When a later trial first reports from the same worker,
what it began with minus what the ended trial began with is what the ended trial kept: a module-level
cache of tensors, a thread still running. Beyond `KEPT`, the driver writes one `warning` (code
`trial_memory_kept`). A worker that is not reused is ended by Ray, and its memory with it.

A worker's first trial is not judged: it grows the worker once for good (measured on digits: +250 MB of
lazy imports, sklearn's among them, and oneDNN's caches; a GPU's CUDA context), so the first comparison
is between its second and third trials. A trial that keeps memory every time is seen there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MB = 1 << 20
#: Memory an ended trial may leave behind in its worker without a warning (allocator slack, caches).
KEPT = 256 * MB

Worker = tuple[str, int]  # (node, pid)


@dataclass
class Tenure:
    """One trial in one worker: its number and what the worker held when it began."""

    worker: Worker
    number: int
    start_mem: dict[str, int]
    nth: int  # the worker's first trial, second, ...
    status: str = "running"


class Handover:
    """The driver's memory of which trial ran in which worker, and what each worker held at each start."""

    def __init__(self) -> None:
        self.running: dict[str, Tenure] = {}  # trial id → its tenure
        self.ended: dict[Worker, Tenure] = {}  # worker → the last trial that ended in it
        self.trials_in: dict[Worker, int] = {}  # worker → how many trials began in it

    def result(self, trial_id: str, number: int, result: dict[str, Any]) -> dict[str, Any] | None:
        """Take a trial's result; the fields of a `trial_memory_kept` warning, if its worker's last trial
        kept more than KEPT of it."""
        start, pid = result.get("start_mem"), result.get("pid")
        if trial_id in self.running or not isinstance(start, dict) or not pid:
            return None
        worker = (str(result.get("node") or ""), int(pid))
        self.trials_in[worker] = self.trials_in.get(worker, 0) + 1
        tenure = self.running[trial_id] = Tenure(worker, number, start, self.trials_in[worker])
        before = self.ended.pop(worker, None)
        return None if before is None or before.nth < 2 else kept(before, tenure)

    def end(self, trial_id: str, status: str) -> None:
        """A trial ended (terminated, stopped, stopped_early, error): its worker may run the next."""
        tenure = self.running.pop(trial_id, None)
        if tenure is not None:
            tenure.status = status
            self.ended[tenure.worker] = tenure


def kept(before: Tenure, after: Tenure) -> dict[str, Any] | None:
    """The warning's fields when `after` began with more than KEPT beyond what `before` began with."""
    rss = after.start_mem.get("rss", 0) - before.start_mem.get("rss", 0)
    cuda = after.start_mem.get("cuda", 0) - before.start_mem.get("cuda", 0)
    if rss <= KEPT and cuda <= KEPT:
        return None
    held = [f"{rss // MB} MB more host memory"] * (rss > KEPT) + [f"{cuda // MB} MB more of CUDA tensors"] * (
        cuda > KEPT)
    return {
        "code": "trial_memory_kept",
        "message": f"trial #{before.number} ({before.status}) did not give its memory back: its worker "
                   f"(pid {before.worker[1]}) began trial #{after.number} holding {' and '.join(held)}",
        "hint": "something keeps the ended trial's tensors alive (a module-level list or cache, a thread); "
                "each later trial in that worker has that much less; tune.reuse_actors = false gives every "
                "trial a fresh worker",
        "number": before.number, "next_number": after.number, "pid": before.worker[1],
        "node": before.worker[0], "kept_rss": rss, "kept_cuda": cuda,
    }
