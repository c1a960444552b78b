"""The Slurm tests' cluster: one real two-node Slurm for the whole session (tests/slurm/slurm_cluster.py)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def cluster(slurm: Cluster) -> Iterator[Cluster]:
    """The session's cluster, left with no job by each test."""
    yield slurm
    slurm.cancel_all()
