"""Whether a Ray cluster answers at a config's address, asked before the run exists: a search (or a ddp
run on Ray) whose `ray_address` answers nothing is refused in one line, not started as a run that waits
minutes on Ray's retries with no event (`tune --ray-address 127.0.0.1:1` once stayed `running`).

Asked with a TCP connection to the address's port (the GCS's), not with Ray: the console never imports it.
"""

from __future__ import annotations

import socket
from typing import Any

#: How long a connection may take before the address is said not to answer (a silent host drops it).
CONNECT_S = 3.0


def problem(address: str, timeout: float = CONNECT_S) -> str | None:
    """Why nothing answers at HOST:PORT (None when something listens there; `auto` and '' are Ray's
    own to find)."""
    if not address or address == "auto":
        return None
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return None
    except TimeoutError:
        return f"nothing answered in {timeout:.0f} s"
    except (OSError, ValueError) as e:
        return getattr(e, "strerror", None) or str(e)


def first_unreachable(config: dict[str, Any], kind: str) -> str | None:
    """The line for a Ray address of this config that answers nothing (a search's `tune.ray_address`, a
    ddp run's `strategy.ray_address`); None when each answers, or when a Slurm job's node will join it."""
    if (config.get("slurm") or {}).get("enabled"):  # (the job's node may reach what this host cannot)
        return None
    key = "tune.ray_address" if kind == "tune" else "strategy.ray_address"
    section, _, name = key.partition(".")
    address = (config.get(section) or {}).get(name) or ""
    why = problem(address)
    if why is None:
        return None
    return (f"{key}: no Ray cluster answers at {address} ({why}): start one there with `ray start --head`, "
            "or leave it empty for a local Ray")
