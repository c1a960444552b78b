"""DDP's stop agreement stays off the per-step hot path: ranks meet every ~0.25 s of steps, not every step."""

from __future__ import annotations

import types
from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist

from trainconsole.trainers.strategies import rank_sync
from trainconsole.trainers.strategies.rank_sync import RankSync
from trainconsole.trainers.strategies.rendezvous import free_port


@pytest.fixture
def gloo_world_of_one(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A one-process gloo group in this process; yields a list that counts all_gather calls."""
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port("127.0.0.1")))
    dist.init_process_group("gloo", rank=0, world_size=1)
    calls: list[int] = []
    real = dist.all_gather

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dist, "all_gather", counted)
    try:
        yield calls
    finally:
        dist.destroy_process_group()


def test_ranks_meet_every_quarter_second_of_steps(gloo_world_of_one: list[int],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(rank_sync, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    sync = RankSync(torch.device("cpu"))
    for _ in range(1000):  # 10 ms steps: a meeting every 25 steps
        clock[0] += 0.01
        assert sync.step(False) is False
    assert 35 <= len(gloo_world_of_one) <= 45

    waited = 0
    while not sync.step(True):  # a stop is agreed at the next meeting, within one interval
        waited += 1
        clock[0] += 0.01
    assert waited < 25 and sync.step(False) is True  # and stays agreed, without meeting again
    mem = sync.memory({"rss": 1, "devices": []}, local_world=1)
    assert mem["ranks"] == [{"rank": 0, "node": 0, "device": "cpu", "rss": mem["ranks"][0]["rss"]}]
    assert mem["ranks"][0]["rss"] > 0 and mem["devices"] == []


def test_a_forced_meeting_happens_at_once(gloo_world_of_one: list[int]) -> None:
    sync = RankSync(torch.device("cpu"), first_interval=100)
    assert sync.step(True) is False and not gloo_world_of_one  # not due yet: no collective
    assert sync.agree(True) is True and len(gloo_world_of_one) == 1
