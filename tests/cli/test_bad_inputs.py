"""Every input answered, through the real CLI: a config path that is not TOML text, devices this machine
does not have, a value of the wrong type. Each: exit 2, one line on stderr naming what and why, no
traceback, nothing on stdout, no run directory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from trainconsole.protocol import machine
from trainconsole.protocol.config_file import MAX_BYTES

EXE = str(Path(sys.executable).parent / "trainconsole")
RUN_TOML = '[model]\nname = "small_cnn"\n[data]\nname = "digits"\n[train]\nepochs = 1\n'
TUNE_TOML = RUN_TOML + '[tune]\nnum_samples = 2\n[tune.space]\n"train.lr" = { loguniform = [1e-3, 0.1] }\n'
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # NVML then sees no GPU, on a GPU box too
STRATEGIES = ("single", "dp", "ddp", "model_parallel")


def refused(home: Path, argv: list[str], says: str, env: dict[str, str] | None = None) -> str:
    """Run `trainconsole ARGV`; assert it was refused as a user should see it; its one line."""
    out = subprocess.run([EXE, *argv], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **(env or {})})  # the timeout: a FIFO read that blocked
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, (argv, out.returncode, out.stderr)
    assert lines[0].startswith("trainconsole: error: ") and says in lines[0], (argv, lines[0])
    assert "Traceback" not in out.stderr and not out.stdout, (argv, out.stdout)
    runs = home / "runs"
    assert not runs.exists() or not any(runs.iterdir()), (argv, list(runs.iterdir()))
    return lines[0]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def bind_socket(path: Path) -> None:
    """A socket file (it stays after the socket closes): open() fails on it even for root."""
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))


def unreadable(path: Path) -> None:
    if os.geteuid() == 0:  # root reads a mode-000 file; the socket case covers the failed open
        pytest.skip("root can read a mode-000 file")
    write(path, RUN_TOML).chmod(0)


#: Paths that are not TOML text: how to make each, and what the one line says.
NOT_TEXT: dict[str, tuple[Callable[[Path], object], str]] = {
    "directory": (Path.mkdir, "is a directory, not a TOML config file"),
    "fifo": (os.mkfifo, "is a FIFO (named pipe), not a TOML config file"),
    "socket": (bind_socket, "cannot be read: no such device or address"),
    "binary": (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "is a binary file"),
    "latin1": (lambda p: p.write_bytes(b"[train]\nlr = 0.1 # caf\xe9\n"), "is not UTF-8 text (byte 0xe9"),
    "too-large": (lambda p: write(p, RUN_TOML + "#" * MAX_BYTES), "is larger than 2 MiB"),
    "missing": (lambda p: None, "file not found"),
    "unreadable": (unreadable, "cannot be read: permission denied"),
}
#: How each command takes a config path (run --script: a script beside the config).
COMMANDS = {"run": lambda p: ["run", str(p)], "tune": lambda p: ["tune", str(p)],
            "script": lambda p: ["run", str(p), "--script", str(write(p.parent / "train.py", "print(1)\n"))]}


@pytest.mark.parametrize("kind", NOT_TEXT)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_path_that_is_not_toml_text(command: str, kind: str, home: Path, tmp_path: Path) -> None:
    make, says = NOT_TEXT[kind]
    path = tmp_path / "config.toml"
    make(path)
    line = refused(home, COMMANDS[command](path), says)
    assert line.startswith(f"trainconsole: error: {path}: "), line


@pytest.mark.parametrize("name", STRATEGIES)
def test_devices_the_machine_does_not_have(name: str, home: Path, tmp_path: Path) -> None:
    """Per strategy: more CPU workers than cores, GPU indices without a GPU, one beyond the GPUs here."""
    config, cores, gpus = str(write(tmp_path / "c.toml", RUN_TOML)), machine.cpu_count(), machine.gpu_count()
    run = ["run", config, "--set", f"strategy.name={name}"]
    refused(home, [*run, "--set", "strategy.accelerator=cpu", "--set", f"strategy.devices={cores + 1}"],
            f"strategy.devices: must be <= {cores}, the CPU cores of this machine")
    refused(home, [*run, "--set", "strategy.devices=[0, 1]"],
            "strategy.devices: lists GPU indices, but no GPU is visible on this machine", env=NO_GPU)
    refused(home, [*run, "--set", f"strategy.devices=[{gpus}]"],
            f"names GPU {gpus}, but this machine has" if gpus else "lists GPU indices, but no GPU is visible")


def test_cuda_and_device_flags_without_a_gpu(home: Path, tmp_path: Path) -> None:
    config = str(write(tmp_path / "c.toml", RUN_TOML))
    script = str(write(tmp_path / "train.py", "print(1)\n"))
    refused(home, ["run", config, "--set", "strategy.accelerator=cuda"],
            'strategy.accelerator: is "cuda", but no GPU is visible', env=NO_GPU)
    for argv in (["run", config, "--devices", "0,1"], ["run", "--script", script, "--devices", "0,1"]):
        refused(home, argv, "strategy.devices: lists GPU indices", env=NO_GPU)


def test_a_search_s_devices(home: Path, tmp_path: Path) -> None:
    tune, cores = ["tune", str(write(tmp_path / "t.toml", TUNE_TOML))], machine.cpu_count()
    refused(home, [*tune, "--set", "strategy.devices=[0]"], "strategy.devices: lists GPU", env=NO_GPU)
    refused(home, [*tune, "--set", "strategy.accelerator=cpu", "--set", f"strategy.devices={cores + 1}"],
            f"strategy.devices: must be <= {cores}, the CPU cores")


def test_a_wrong_type_says_what_is_allowed_in_words(home: Path, tmp_path: Path) -> None:
    in_file = write(tmp_path / "c.toml", RUN_TOML + "batch_size = 1.5\n")
    expected = 'trainconsole: error: train.batch_size: must be an integer or "auto" (got 1.5)'
    assert refused(home, ["run", str(in_file)], "train.batch_size") == expected
    config = str(write(tmp_path / "d.toml", RUN_TOML))
    assert refused(home, ["run", config, "--set", "train.batch_size=1.5"], "train.batch_size") == expected
    refused(home, ["run", config, "--set", "train.tensorboard=yes"],
            'train.tensorboard: must be true or false (got "yes")')
    tune = ["tune", str(write(tmp_path / "t.toml", TUNE_TOML)), "--set", "tune.num_samples=many"]
    refused(home, tune, 'tune.num_samples: must be an integer (got "many")')


#: A ddp run on a Ray cluster: what is refused before anything starts, and what the one line names.
RAY_REFUSED = [
    (["--ray-address", "127.0.0.1:6379"], "--ray-address: places the ranks of a ddp run on a Ray cluster"),
    (["--set", 'strategy.name="dp"', "--ray-address", "h:1"], "strategy.name = 'ddp'"),
    (["--set", 'strategy.name="ddp"', "--ray-address", "ray://h:10001"], "strategy.ray_address"),
    (["--set", 'strategy.name="ddp"', "--ray-address", "not an address"], "'auto' or HOST:PORT"),
    (["--set", 'strategy.name="ddp"', "--set", "strategy.max_failures=1"],
     "strategy.max_failures: only goes"),
    (["--set", 'strategy.name="ddp"', "--set", "strategy.max_failures=-1", "--ray-address", "h:1"],
     "strategy.max_failures: must be >= 0"),
    (["--set", 'strategy.name="ddp"', "--set", "strategy.min_workers=3", "--set", "strategy.devices=2",
      "--ray-address", "h:1"], "strategy.min_workers: must be <= strategy.devices (2)"),
    (["--set", 'strategy.name="ddp"', "--set", "strategy.devices=[0, 1]", "--ray-address", "h:1"],
     'strategy.devices: must be "auto" or a count'),
    (["--set", 'strategy.name="ddp"', "--set", "strategy.node_rank=1", "--set", "strategy.nnodes=2",
      "--ray-address", "h:1"], "strategy.node_rank: must be 0 on a Ray cluster"),
]


@pytest.mark.parametrize(("args", "says"), RAY_REFUSED, ids=[a[-1] + str(i) for i, (a, _) in
                                                               enumerate(RAY_REFUSED)])
def test_a_ddp_run_on_a_ray_cluster_is_checked_before_it_starts(args: list[str], says: str, home: Path,
                                                                 tmp_path: Path) -> None:
    config = write(tmp_path / "run.toml", RUN_TOML)
    refused(home, ["run", str(config), *args], says)


def test_ray_address_does_not_go_with_a_script(home: Path, tmp_path: Path) -> None:
    script = write(tmp_path / "train.py", "print('hi')\n")
    refused(home, ["run", "--script", str(script), "--ray-address", "h:1"], "--ray-address")
