"""A full disk is named whatever hides it, and the event log keeps what it could not write, in order."""

from __future__ import annotations

import errno
import json
from pathlib import Path

from trainconsole.protocol import EventWriter
from trainconsole.trainers.troubles.disk import is_disk_full
from trainconsole.trainers.troubles.explain import explain

TORCH_ZIP = "[enforce fail at inline_container.cc:672] . unexpected pos 217280 vs 217168"


def test_enospc_is_named_behind_torch_and_dataloader_wrappers() -> None:
    hidden = RuntimeError(TORCH_ZIP)
    worker = RuntimeError("Caught OSError in DataLoader worker process 0.\nOSError: [Errno 28] No space left")
    chained = RuntimeError("saving failed")
    chained.__cause__ = OSError(errno.EDQUOT, "Disk quota exceeded")
    for exc in (hidden, worker, chained, OSError(errno.ENOSPC, "No space left on device")):
        assert is_disk_full(exc)
        why = explain(exc)
        assert why.cause.startswith("no space left on /") and " free): " in why.cause, why.cause
        assert "TRAINCONSOLE_HOME" in why.hint and "fewer checkpoints" in why.hint
    assert not is_disk_full(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_a_writer_on_a_full_disk_keeps_its_events_and_writes_them_in_order_later(tmp_path: Path,
                                                                                monkeypatch) -> None:
    log = tmp_path / "events.jsonl"
    writer = EventWriter(log, "r", reserve_bytes=4096)
    assert (tmp_path / ".reserve").stat().st_size == 4096
    writer.emit("step", step=1)
    real_write, full = __import__("os").write, {"on": True}

    def write(fd: int, data: bytes) -> int:
        if full["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr("trainconsole.protocol.events.os.write", write)
    writer.emit("step", step=2)
    writer.emit("step", step=3)
    assert writer.waiting == 3 and not (tmp_path / ".reserve").exists()  # the ballast went for the warning
    full["on"] = False
    writer.emit("eval", step=3)
    writer.close()
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["type"], e.get("step") or e.get("code")) for e in logged] == [
        ("step", 1), ("step", 2), ("warning", "disk_full"), ("step", 3), ("eval", 3),
        ("warning", "disk_space_back")]
    assert (tmp_path / ".reserve").exists() is False  # closed: the ballast is gone with the writer
