"""A diverging run is warned about, and train.grad_clip_norm keeps the same run from diverging."""

from __future__ import annotations

import tomllib
from pathlib import Path

from trainer_runs import REPO, events, make_run, train

from trainconsole.protocol import validate
from trainconsole.trainers.troubles.divergence import DivergenceWatch


def memory_cap_example(**train_keys: object) -> dict:
    """examples/digits_memory_cap.toml for 4 epochs, uncapped: its loss goes from ~0.8 to ~16."""
    raw = tomllib.loads((REPO / "examples" / "digits_memory_cap.toml").read_text())
    raw["train"].update(epochs=4, max_memory_mb=0, **train_keys)
    return validate(raw)


def diverging(run: object) -> list[dict]:
    return [e for e in events(run, "warning") if e.get("code") == "diverging"]


def test_watch_warns_once_on_a_jump_and_not_on_a_falling_noisy_loss() -> None:
    falling = DivergenceWatch()
    assert not any(falling.observe(s, 2.3 / (1 + s) + 0.05 * (s % 3)) for s in range(300))
    jump = DivergenceWatch()
    losses = [2.3, 1.2, 0.81, 0.9, 5.0, 16.2, 30.0]
    found = [w for s, loss in enumerate(losses) if (w := jump.observe(s, loss))]
    assert len(found) == 1 and found[0]["step"] == 4 and found[0]["ratio"] == 6.2
    assert "grad_clip_norm" in found[0]["hint"]


def test_a_diverging_run_is_warned_and_clipping_prevents_it(tc_home: Path) -> None:
    run = make_run(tc_home, memory_cap_example())
    assert train(run, timeout=240) == 0
    (warning,) = diverging(run)
    assert warning["ratio"] >= 4 and "lower train.lr" in warning["hint"]
    clipped = make_run(tc_home, memory_cap_example(grad_clip_norm=1.0))
    assert train(clipped, timeout=240) == 0
    assert not diverging(clipped)
    assert events(clipped, "eval")[-1]["val_acc"] > 0.5 > events(run, "eval")[-1]["val_acc"]
