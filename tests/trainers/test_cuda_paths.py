"""CUDA paths, on a GPU box only (marked `gpu`, skipped elsewhere; `make gpu-check` reports all of them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from trainer_runs import GPUS, events, make_config, make_run, train

pytestmark = pytest.mark.gpu
CUDA = {"accelerator": "cuda"}


def test_single_trains_on_cuda_0(tc_home: Path) -> None:
    run = make_run(tc_home, make_config(strategy=CUDA, train={"epochs": 1, "max_steps": 20}))
    assert train(run) == 0, run.stderr.read_text()
    assert events(run, "started")[0]["devices"] == ["cuda:0"]
    assert events(run, "step")[-1]["mem"]["devices"][0]["device"] == "cuda:0"


def test_fp16_keeps_fp16_and_saves_its_grad_scaler(tc_home: Path) -> None:
    run = make_run(tc_home, make_config(strategy=CUDA, train={"epochs": 1, "precision": "fp16"}))
    assert train(run) == 0, run.stderr.read_text()
    assert events(run, "started")[0]["precision"] == "fp16" and not events(run, "warning")
    assert torch.load(run.last_ckpt, map_location="cpu", weights_only=True)["scaler"]["scale"] > 0


def test_ddp_uses_nccl_on_every_gpu(tc_home: Path) -> None:
    config = make_config(strategy={"name": "ddp", **CUDA}, train={"epochs": 1, "max_steps": 10})
    run = make_run(tc_home, config)
    assert train(run) == 0, run.stderr.read_text()
    started = events(run, "started")[0]
    assert started["backend"] == "nccl" and started["world_size"] == GPUS
