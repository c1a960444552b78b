"""The run directory: where a run's config, state, event log, output and checkpoints live."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

KINDS = ("train", "tune", "script")


def home() -> Path:
    """`$TRAINCONSOLE_HOME`, else the per-user data directory; created mode 0700."""
    env = os.environ.get("TRAINCONSOLE_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        try:
            import platformdirs

            path = Path(platformdirs.user_data_dir("trainconsole"))
        except ImportError:
            path = Path.home() / ".local" / "share" / "trainconsole"
    (path / "runs").mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def new_run_id(name: str) -> str:
    """A sortable, unique id: start time, a slug of the name, and a few random hex digits."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[:24] or "run"
    # os.urandom is what secrets.token_hex reads, without importing secrets (hmac, OpenSSL: ~15 ms at start)
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{os.urandom(2).hex()}"


def quoted_id(run_id: str) -> str:
    """An id as a message quotes it: whole, or its start and length when it is too long to read."""
    return repr(run_id if len(run_id) <= 80 else f"{run_id[:60]}... ({len(run_id)} characters)")


class RunDir:
    """One run's directory and the files in it (the layout: README, "Headless CLI")."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.id = self.path.name

    # The files' paths are made when first asked for: listing a home of 10,000 runs makes 10,000 RunDirs.
    config = cached_property(lambda self: self.path / "config.toml")
    info_path = cached_property(lambda self: self.path / "run.json")
    events = cached_property(lambda self: self.path / "events.jsonl")
    stdout = cached_property(lambda self: self.path / "stdout.log")
    stderr = cached_property(lambda self: self.path / "stderr.log")
    checkpoints = cached_property(lambda self: self.path / "checkpoints")
    last_ckpt = cached_property(lambda self: self.checkpoints / "last.pt")
    best_ckpt = cached_property(lambda self: self.checkpoints / "best.pt")
    lock_path = cached_property(lambda self: self.path / ".lock")

    @classmethod
    def create(cls, root: Path, run_id: str) -> RunDir:
        """Make a new run directory (mode 0700) under `root/runs`."""
        run = cls(root / "runs" / run_id)
        run.path.mkdir(mode=0o700)
        run.checkpoints.mkdir(mode=0o700)
        return run

    @classmethod
    def find(cls, root: Path, run_id: str) -> RunDir | None:
        """The run with this id, or with a unique id prefix / suffix; None if there is none."""
        exact = root / "runs" / run_id
        try:
            found = bool(run_id) and "/" not in run_id and (exact / "run.json").exists()
        except OSError:  # a name too long for the file system (ENAMETOOLONG): no run has it
            found = False
        if found:
            return cls(exact)
        hits = [p for p in list_runs(root) if p.id.startswith(run_id) or p.id.endswith(run_id)]
        return hits[0] if len(hits) == 1 and run_id else None

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """The run's lifecycle lock: launch, resume, stop and kill hold it, so they never interleave."""
        return locked(self.lock_path)

    def read_info(self) -> dict[str, Any]:
        """run.json as a dict ({} if missing or unreadable)."""
        try:
            return json.loads(self.info_path.read_text())
        except (OSError, ValueError):
            return {}

    def write_info(self, info: dict[str, Any]) -> None:
        """Replace run.json atomically (temp file + rename), so readers never see half of it."""
        tmp = self.info_path.with_name(f".run.json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(info, indent=2))
        os.replace(tmp, self.info_path)

    def epochs(self, info: dict[str, Any]) -> int | None:
        """The epochs a training run is set to train in all (its config's `train.epochs`); None for a
        script or a search, whose totals are their own (a script's come in its events)."""
        if info.get("kind", "train") != "train":
            return None
        import tomllib  # (here: the console's first frame needs this module, not a TOML parser)

        try:
            with open(self.config, "rb") as f:
                return epochs_in(info, tomllib.load(f))
        except (OSError, tomllib.TOMLDecodeError):
            return None

    def update_info(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into run.json and return the result."""
        info = {**self.read_info(), **fields}
        self.write_info(info)
        return info


def epochs_in(info: dict[str, Any], config: dict[str, Any]) -> int | None:
    """`RunDir.epochs` from a config already read."""
    epochs = config.get("train", {}).get("epochs") if info.get("kind", "train") == "train" else None
    return epochs if isinstance(epochs, int) and not isinstance(epochs, bool) else None


def list_runs(root: Path) -> list[RunDir]:
    """Every run directory under `root/runs` that has a run.json, oldest first."""
    try:
        entries = sorted(os.scandir(root / "runs"), key=lambda e: e.name)
    except OSError:
        return []
    return [RunDir(e.path) for e in entries if os.path.exists(os.path.join(e.path, "run.json"))]


@contextlib.contextmanager
def locked(path: os.PathLike[str] | str) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created if missing) for the duration of the block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
