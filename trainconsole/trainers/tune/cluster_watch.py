"""A search on a Ray cluster that goes away: said in Ray's words, and ended `failed` within a bound.

Joined to a cluster (`--ray-address`), the driver's Ray waits for a lost GCS for 60 s
(`gcs_rpc_server_reconnect_timeout_s`), then logs "Failed to connect to GCS within 60 seconds ... The
program will terminate" and ends the process on the spot: the search read `running` for a minute, then
`lost`, with no final event. `ClusterWatch` asks the cluster's GCS a trivial question every `EVERY_S`
(a key-value read with a timeout); once it has not answered for `GONE_S`, the cluster is gone: the watch
keeps Ray's answer (e.g. "Timed out while waiting for GCS to become available.") and asks Tune to end
its loop as a stop does (SIGUSR1 to this process: Tune's handler runs in the main thread). The driver
then writes the trials still pending or running as `error` and the search `failed` with Ray's words. A
driver stuck in Ray `FORCE_S` later is ended by the watch itself, after the same events: the search is
`failed` at most `BOUND_S` after its cluster went, and its driver gone.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

#: How often the GCS is asked, and how long each question may wait for its answer.
EVERY_S = 3.0
ASK_TIMEOUT_S = 3
#: How long the GCS may not answer before the cluster is said to be gone (a GCS restarted by Ray's fault
#: tolerance is back well within it).
GONE_S = 15.0
#: How long the driver then has to end the search itself before the watch ends the process.
FORCE_S = 10.0
#: What ending the process takes at most once the events are written (run.json, the notify command is
#: started, the summary), with room for a loaded host.
END_S = 14.0
#: The bound: the search is `failed` at most this long after its cluster went (Ray itself would end the
#: driver, with no final event, 60 s after; `start` gives the driver's Ray longer, see `ray_env`).
BOUND_S = GONE_S + EVERY_S + ASK_TIMEOUT_S + FORCE_S + END_S
#: Set for the driver's Ray before `ray.init` (unless set already): it outwaits the watch's bound.
RAY_RECONNECT = "RAY_gcs_rpc_server_reconnect_timeout_s"

GONE = threading.Event()  # set once the watch has found the cluster gone


def ray_env() -> None:
    """Before `ray.init` to a cluster: Ray does not end the driver before the watch has ended the search."""
    os.environ.setdefault(RAY_RECONNECT, str(int(BOUND_S + 30)))


def ask_gcs() -> None:
    """One trivial question to the cluster's GCS (raises Ray's error when it does not answer in time)."""
    import ray

    client = ray._private.worker.global_worker.gcs_client  # noqa: SLF001 - the driver's own GCS client
    client.internal_kv_get(b"trainconsole-watch", b"trainconsole", timeout=ASK_TIMEOUT_S)


class ClusterWatch:
    """A daemon thread that asks the GCS; `cause` holds Ray's words once the cluster is gone."""

    def __init__(self, address: str, give_up: Callable[[str], None], ask: Callable[[], None] = ask_gcs,
                 gone_s: float = GONE_S, every_s: float = EVERY_S, force_s: float = FORCE_S) -> None:
        self.address, self.give_up, self.ask = address, give_up, ask
        self.gone_s, self.every_s, self.force_s = gone_s, every_s, force_s
        self.cause = ""
        self.ended = threading.Event()  # the driver is past its search: nothing to watch any more
        self.thread = threading.Thread(target=self._watch, name="trainconsole-cluster-watch", daemon=True)

    def start(self) -> ClusterWatch:
        self.thread.start()
        return self

    def close(self) -> None:
        self.ended.set()

    def _watch(self) -> None:
        since = time.monotonic()  # the GCS's last answer (ray.init has just had one)
        while not self.ended.wait(self.every_s):
            try:
                self.ask()
                since = time.monotonic()
                continue
            except Exception as exc:  # noqa: BLE001 - Ray's error is the cluster's last word
                if not from_ray(exc):  # not an answer from Ray (its API changed?): watch no more
                    return
                said = words(exc)
            now = time.monotonic()
            if now - since >= self.gone_s:
                self.cause = (f"the Ray cluster at {self.address} went away (no answer for "
                              f"{now - since:.0f} s); Ray said: {said}")
                GONE.set()
                interrupt_tune()  # Tune ends its loop as on a stop; the driver says `failed`
                if not self.ended.wait(self.force_s):  # still stuck in Ray: end it here
                    self.give_up(self.cause)
                return


def interrupt_tune() -> None:
    """Ask Tune to end its loop (its SIGUSR1 handler, run by the main thread), if it is running."""
    if callable(signal.getsignal(signal.SIGUSR1)):
        os.kill(os.getpid(), signal.SIGUSR1)


def from_ray(exc: BaseException) -> bool:
    """Is this Ray's word on the GCS (its RpcError, a timeout, a lost connection)?"""
    return type(exc).__module__.startswith("ray") or isinstance(exc, (TimeoutError, ConnectionError))


def words(exc: BaseException) -> str:
    """Ray's error as one line: its type and message."""
    text = " ".join(str(exc).split()) or "no answer"
    return f"{type(exc).__name__}: {text}"


def gone() -> bool:
    """True once the watch found the cluster gone."""
    return GONE.is_set()


def fields(cause: str) -> dict[str, Any]:
    """The `failed` event's cause and hint for a search whose cluster went away."""
    return {"cause": cause, "hint": "the cluster's head (its GCS) stopped answering: was the cluster "
                                    "stopped, or its head's machine lost? `ray status --address ADDR` tells"}
