"""A run's samples/s is its mean over its training, whatever its last moments were like."""

from __future__ import annotations

import time

import torch

from trainconsole.protocol.rates import MeanRate, mean_rate
from trainconsole.trainers.builtin.meter import StepMeter


def meter_events(pauses: list[float], batch: int = 32) -> tuple[list[dict], float]:
    """Steps taking PAUSES seconds each, a step event after every one (the real meter, the real clock);
    the events and the seconds the steps took, by the test's own clock."""
    meter = StepMeter(torch.device("cpu"), [], interval=0.0)
    events, began = [], time.monotonic()
    meter.restart()
    for i, pause in enumerate(pauses):
        time.sleep(pause)
        meter.add(torch.tensor(1.0), batch)
        events.append({"type": "step", "step": i + 1, **meter.flush(i + 1)})
    return events, time.monotonic() - began


def test_a_run_that_slowed_down_at_its_end_shows_its_mean_not_its_last_window() -> None:
    events, seconds = meter_events([0.005] * 40 + [0.15] * 2)
    truth = 42 * 32 / seconds  # samples trained over training seconds
    mean = mean_rate(events)
    assert mean is not None and abs(mean - truth) / truth < 0.25
    assert events[-1]["samples_per_s"] < mean / 3  # the last window alone says something else


def test_a_run_that_sped_up_at_its_end_shows_its_mean_and_a_resumed_one_goes_on() -> None:
    events, seconds = meter_events([0.05] * 6 + [0.001] * 3)
    truth = 9 * 32 / seconds
    assert abs(mean_rate(events) - truth) / truth < 0.25
    assert events[-1]["samples_per_s"] > 3 * mean_rate(events)
    resumed = StepMeter(torch.device("cpu"), [], interval=0.0)
    resumed.resume_totals({"samples": events[-1]["samples"], "train_s": events[-1]["train_s"]})
    resumed.restart()
    resumed.add(torch.tensor(1.0), 32)
    after = resumed.flush(10)
    assert after["samples"] == 10 * 32 and after["train_s"] > events[-1]["train_s"]


def test_a_scripts_printed_rates_weigh_by_the_time_each_step_took() -> None:
    """No totals (a script's `samples/s` lines): 3 steps at 100/s and 1 at 1,000/s is 4 steps in 0.031 s
    per sample-batch unit, not the mean of the four figures (325)."""
    mean = MeanRate()
    for rate in (100.0, 100.0, 100.0, 1000.0):
        mean.add({"type": "step", "samples_per_s": rate})
    assert mean.value is not None and abs(mean.value - 4 / 0.031) < 1e-6
