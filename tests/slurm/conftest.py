"""The Slurm tests' cluster: one real two-node Slurm for the whole session (tests/slurm/slurm_cluster.py)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from slurm_cluster import Cluster, missing, start


@pytest.fixture(scope="session")
def slurm() -> Iterator[Cluster]:
    """A started cluster (munged, slurmctld, slurmd n1 and n2), `SLURM_CONF` set for every client
    (trainconsole's own and the runs'); every daemon is ended after the session."""
    why = missing()
    if why:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="tcslurm-"))
    cluster = start(root)
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        cluster.cancel_all()
        cluster.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
    assert not cluster.left(), f"the test Slurm left: {cluster.left()}"


@pytest.fixture
def cluster(slurm: Cluster, home: Path) -> Iterator[Cluster]:
    """The session's cluster; after each test, no job in squeue and no process of the test's runs left."""
    yield slurm
    slurm.cancel_all()
    assert slurm.jobs() == [], f"jobs left in squeue: {slurm.jobs()}"
    left = wait_for_none(lambda: runs_left(home), 30)
    assert not left, f"processes of the test's runs left: {left}"


def runs_left(home: Path) -> list[str]:
    """The command lines of processes that name the test's home (its runs' processes, on any node)."""
    needle = str(home)
    return [line for p in psutil.process_iter(["cmdline"]) if needle in (line := " ".join(p.info["cmdline"]
                                                                                        or []))]


def wait_for_none(found: Callable[[], list[str]], timeout: float) -> list[str]:
    """Poll `found` until it finds nothing or `timeout` passes; what it last found."""
    deadline = time.monotonic() + timeout
    while (left := found()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
