"""What the dashboard reads of the app it runs in, named (the app, `TrainConsole`, is the one that has it):
given to the screen, its frames and its table reads at construction instead of looked up on `screen.app`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from trainconsole.console.services.gpu import Devices
    from trainconsole.console.services.tailer import Tailer
    from trainconsole.protocol.host_devices import HostSnapshot


class Feeds(Protocol):
    """The app's live facts: whether the dashboard is up and every run's history read, the latest device
    samples (this host's, other hosts'), and the tailer (asked for histories, poked after an action)."""

    @property
    def dashboard(self) -> bool:
        """The dashboard has replaced the first frame's screen."""

    @property
    def loaded(self) -> bool:
        """Every run's history has been read into the board."""

    @property
    def devices(self) -> Devices | None:
        """This host's latest device sample (None before the first)."""

    @property
    def other_hosts(self) -> tuple[HostSnapshot, ...]:
        """Other hosts' latest device snapshots."""

    @property
    def tailer(self) -> Tailer:
        """The thread that reads the runs' logs."""
