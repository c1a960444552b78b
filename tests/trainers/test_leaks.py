"""Leak warnings: a model that hoards activations is caught; the examples, trained as long, are not."""

from __future__ import annotations

import random
import textwrap
import tomllib
from pathlib import Path

import pytest
from trainer_runs import REPO, events, make_run, train

from trainconsole.protocol import validate
from trainconsole.trainers.troubles.leaks import LeakWatch, fit

HOARDER = textwrap.dedent('''
    import torch
    from torch import nn

    class Hoarder(nn.Module):
        """Keeps 1 MB per training step together with its graph, like `total_loss += loss` does."""

        def __init__(self, num_classes):
            super().__init__()
            self.fc, self.kept = nn.Linear(64, num_classes), []

        def forward(self, x):
            out = self.fc(x.flatten(1))
            if self.training:
                self.kept.append(torch.ones(256 * 1024) + out.sum())
            return out

    def hoarder(config, num_classes, input_shape):
        return Hoarder(num_classes)
''')
EPOCHS = 12  # 276 steps of digits at batch 64


def leak_warnings(run: object) -> list[dict]:
    return [e for e in events(run, "warning") if e.get("code") == "memory_leak"]


def example(name: str, **train: object) -> dict:
    raw = tomllib.loads((REPO / "examples" / name).read_text())
    raw["train"].update(train)
    return validate(raw)


def test_fit_slope_and_r2() -> None:
    assert fit([(0, 1.0), (10, 6.0), (20, 11.0)]) == pytest.approx((0.5, 1.0))
    assert fit([(0, 5.0), (10, 5.0)]) == (0.0, 0.0)


def test_watch_ignores_warmup_and_noise_and_warns_once_on_steady_growth() -> None:
    rng = random.Random(0)
    flat = LeakWatch(warmup_steps=20)
    assert not any(flat.observe(s, {"rss": (500 + rng.uniform(-30, 30)) * 2**20}) for s in range(0, 2000, 10))
    leaky = LeakWatch(warmup_steps=20)
    warmup = [leaky.observe(s, {"rss": (500 + 5 * s) * 2**20}) for s in range(0, 30, 10)]
    assert warmup == [None, None, None]  # steep, but still the warm-up
    found = [w for s in range(30, 400, 10) if (w := leaky.observe(s, {"rss": (500 + 0.5 * s) * 2**20}))]
    assert len(found) == 1 and found[0]["mb_per_step"] == pytest.approx(0.5)
    assert found[0]["source"] == "RSS" and "loss.item()" in found[0]["hint"]


@pytest.mark.slow
def test_a_model_that_hoards_activations_is_caught(tc_home: Path, tmp_path: Path) -> None:
    (tmp_path / "tc_hoarder.py").write_text(HOARDER)
    config = example("digits.toml", epochs=EPOCHS)
    config["model"]["name"] = "tc_hoarder:hoarder"
    run = make_run(tc_home, config)
    assert train(run, pythonpath=str(tmp_path)) == 0
    (warning,) = leak_warnings(run)
    # 1 MB a step (a few early points can double the estimate), judged only after epoch 1's 23 steps
    assert 0.5 < warning["mb_per_step"] < 3.0 and warning["step"] > 23


@pytest.mark.slow
#: Every example that trains in seconds; the resnet18, memory-cap and two-node examples take minutes and
#: are checked by benchmarks/leak_check.py (docs/BENCHMARKS.md "Leak warnings").
@pytest.mark.parametrize("name", ["digits.toml", "digits_ddp.toml", "digits_dp.toml",
                                  "digits_model_parallel.toml"])
def test_examples_trained_as_long_never_warn(tc_home: Path, name: str) -> None:
    run = make_run(tc_home, example(name, epochs=EPOCHS))
    assert train(run, timeout=300) == 0
    assert len(events(run, "step")) >= 8 and not leak_warnings(run)


SLOW_LEAK = textwrap.dedent('''
    import time

    import torch
    from torch import nn

    KEPT = []

    class SlowLeak(nn.Module):
        """Keeps 0.5 MB per training step (no graph), and takes 0.1 s a step: a leak a window misses."""

        def __init__(self, num_classes):
            super().__init__()
            self.fc = nn.Linear(64, num_classes)

        def forward(self, x):
            if self.training:
                KEPT.append(torch.ones(128 * 1024))
                time.sleep(0.1)
            return self.fc(x.flatten(1))

    def slow_leak(config, num_classes, input_shape):
        return SlowLeak(num_classes)
''')


@pytest.mark.slow
def test_a_slow_leak_is_caught_before_step_600(tc_home: Path, tmp_path: Path) -> None:
    """0.5 MB a step at 0.1 s a step: 12 MB over the old 24-event window, under its 32 MB bar."""
    (tmp_path / "tc_slow_leak.py").write_text(SLOW_LEAK)
    config = example("digits.toml", epochs=20, max_steps=240)
    config["model"]["name"] = "tc_slow_leak:slow_leak"
    run = make_run(tc_home, config)
    assert train(run, pythonpath=str(tmp_path), timeout=300) == 0
    (warning,) = leak_warnings(run)
    assert warning["step"] < 600 and 0.3 < warning["mb_per_step"] < 1.0, warning
