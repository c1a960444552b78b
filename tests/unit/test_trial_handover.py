"""The driver's judgement of whether an ended trial gave its worker's memory back (trainers/tune/handover.py),
on the figures trials report; tests/trainers/test_tune.py runs it on real Ray workers."""

from __future__ import annotations

from trainconsole.trainers.tune.handover import KEPT, MB, Handover


def result(pid: int, rss: int, cuda: int = 0, node: str = "a") -> dict[str, object]:
    return {"pid": pid, "node": node, "start_mem": {"rss": rss, "cuda": cuda}}


def test_only_what_a_later_trial_in_the_same_worker_began_with_counts_from_the_second_trial_on() -> None:
    board = Handover()
    base = 700 * MB
    assert board.result("t1", 1, result(10, base)) is None
    board.end("t1", "terminated")
    assert board.result("t2", 2, result(10, base + 300 * MB)) is None  # the first trial's imports: not judged
    assert board.result("t2", 2, result(10, base + 900 * MB)) is None  # its later results: not again
    board.end("t2", "stopped_early")
    assert board.result("t3", 3, result(11, base + 900 * MB)) is None  # another worker
    assert board.result("t4", 4, result(10, base + 300 * MB + KEPT)) is None  # within what is allowed
    board.end("t4", "stopped")
    board.end("t3", "error")
    warned = board.result("t5", 5, result(10, base + 300 * MB + KEPT + KEPT + MB, cuda=KEPT + 5 * MB))
    assert warned is not None and warned["number"] == 4 and warned["next_number"] == 5
    assert warned["kept_rss"] == KEPT + MB and warned["kept_cuda"] == KEPT + 5 * MB
    assert "trial #4 (stopped)" in warned["message"] and "pid 10" in warned["message"]
    assert "host memory and" in warned["message"] and "CUDA" in warned["message"]
    # the same pid on another node is another worker; a result without start_mem is not judged
    assert board.result("t6", 6, result(10, 10 * KEPT, node="b")) is None
    assert board.result("t7", 7, {"pid": 10, "node": "a"}) is None
