"""The tune run's own Ray: local, loopback only, no dashboard, its files inside the run directory.

Ray's AF_UNIX sockets live under `<temp dir>/session_<date>_<pid>/sockets/`, and a socket path may hold
about 107 bytes. Ray's files always go to `<run>/ray`; when that path is too deep for the sockets, Ray is
handed a short symlink to it, `/tmp/tcray-<hash of the run path>`, recorded in run.json
(`ray_temp_dir`) and removed when the search ends (a kill leaves only that link; the next start of the
run replaces it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from ..slurm.ray_nodes import ENV_NODES
from ..strategies import ray_cluster as cluster
from . import cluster_watch, stopping

#: The longest temp dir that keeps `session_…/sockets/plasma_store` under the AF_UNIX limit.
MAX_TEMP_DIR = 107 - len("/session_2026-01-01_00-00-00_000000_4194304/sockets/plasma_store") - 1


def temp_dir(run_path: Path) -> Path:
    """Make `<run>/ray` and return the path to hand Ray: it, or a short symlink to it under /tmp."""
    inside = run_path.resolve() / "ray"
    inside.mkdir(mode=0o700, exist_ok=True)
    if len(str(inside)) <= MAX_TEMP_DIR:
        return inside
    digest = hashlib.sha1(str(inside).encode()).hexdigest()[:10]
    sweep_dangling(Path(tempfile.gettempdir()))
    link = Path(tempfile.gettempdir()) / f"tcray-{digest}"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(inside, target_is_directory=True)
    return link


def sweep_dangling(folder: Path) -> None:
    """Remove `tcray-*` links whose run directory is gone (left by killed searches since deleted)."""
    for link in folder.glob("tcray-*"):
        if link.is_symlink() and not link.exists():
            link.unlink(missing_ok=True)


def loopback_only() -> None:
    """Give a local Ray 127.0.0.1 as its node address, so that every server it starts (GCS, raylet,
    workers, agents) listens on loopback only. Ray reads this switch when it is imported: call first."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def start(run_path: Path, tune_cfg: dict[str, Any], address: str) -> Path | None:
    """`ray.init` a local Ray (or join `address`); returns the temp dir it made, None when joining."""
    import ray

    # Trials checkpoint every epoch by design: no warning about frequent experiment snapshots.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # A trial stopped on request before its first epoch ends returns with no result: that must not end
    # the whole search (Tune's strict check would want the metric in its final, empty result).
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"
    if address:  # a cluster: the project goes to every node, and every node must reach the run directory
        cluster_watch.ray_env()  # a gone cluster is said by the watch before Ray ends this process
        with contextlib.chdir(run_path):  # not the launch directory on the workers' sys.path (below)
            ray.init(address=address, log_to_driver=False, configure_logging=False,
                     runtime_env=cluster.runtime_env())
        stopping.install()
        cluster.wait_nodes(int(os.environ.get(ENV_NODES) or 0))  # a Slurm job's Ray: every node joined
        cluster.check_storage(run_path.resolve())
        return None
    folder = temp_dir(run_path)
    # A per-run token in the environment: Ray would otherwise write one to ~/.ray/auth_token.
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    cpus = max(1, int(tune_cfg["max_concurrent"] * tune_cfg["cpus_per_trial"] + 0.999))
    # Ray puts the driver's cwd in front of its workers' sys.path: started in the launch directory, a
    # user's `trainconsole/` folder there would shadow ours in every trial. Plug-ins find that directory
    # through TRAINCONSOLE_LAUNCH_DIR instead (`protocol.launch`).
    with contextlib.chdir(folder):
        ray.init(num_cpus=cpus, include_dashboard=False, _temp_dir=str(folder), log_to_driver=False,
                 configure_logging=False, _node_ip_address="127.0.0.1")
    stopping.install()  # ray.init put its own crash handler on SIGTERM: a stop must stay graceful
    return folder


def stop(folder: Path | None) -> None:
    """Shut Ray down and remove the short symlink, if one was made."""
    import ray

    ray.shutdown()
    if folder is not None and folder.is_symlink():
        folder.unlink()
