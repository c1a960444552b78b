"""Where a run lives, the readers' side (stdlib only): one `Place` each, found through one registry.

A run's place is where its process runs: this host (`local`), another host of the shared home (`host`),
a Slurm job (`slurm`). Whoever asks whether a run's process lives, what ended a run that could not say
so itself, why a run waits, or what its row shows of its place asks the run's place, `of(info)`. The
control side (`trainconsole.control.places`) adds starting, stopping and killing, place by place, under
the same names.

Adding a place: a module here whose `PLACE` is a `Place` (override what differs), its control half in
`trainconsole/control/places/` (a subclass of it with `start`, `stop`, `kill`), and one `register` line
below. Only a registered `info_key` in run.json or a `holds` rule sends a run there; a place's module is
imported when a run of it is first met (the console starts without Slurm's).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

#: run.json as a dict; a config as a dict; an event as a dict (the protocol's plain shapes).
Info = dict[str, Any]


class Place:
    """Where a run lives, as every reader of runs sees it. The default is a plain process here."""

    #: The place's name (the registry's key; its control half is found under it).
    name = ""
    #: run.json's key holding the place's own facts (None: a place with no facts of its own).
    info_key: str | None = None
    #: The config section that sends a new run there (None: no section).
    section: str | None = None
    #: How long after a run's end the place may still change how it ended (a scheduler's late word).
    late_word_s = 0.0

    def holds(self, info: Info) -> bool:
        """Whether run.json places the run here (a place with an `info_key` holds the runs that have it)."""
        return self.info_key is not None and self.info_key in info

    def takes(self, config: Info) -> bool:
        """Whether a new run of this config goes here (its section asks for it)."""
        return self.section is not None and self.section in config

    def alive(self, run_path: str | os.PathLike[str], info: Info, now: float | None = None) -> bool | None:
        """Whether the run's current process lives (None: not known yet, e.g. just submitted)."""
        raise NotImplementedError

    def watched(self, info: Info) -> bool:
        """Whether the run's liveness can change while run.json does not (a heartbeat that comes back, a
        scheduler's late word): a reader then asks `alive` again even after it said False."""
        return False

    def settle(self, run_path: str | os.PathLike[str], info: Info) -> str | None:
        """Write the place's word on a run that ended without its final event; the status written, or
        None (nothing to say, as for a plain process: it is `lost`)."""
        return None

    def check_section(self, values: Any) -> dict[str, Any]:
        """The place's config section checked and filled with defaults (ConfigError names the key)."""
        raise NotImplementedError

    def check_config(self, config: Info, search: bool) -> bool:
        """Check the whole config for this place (ConfigError); whether the run's devices are this
        host's, to be checked here (False: they are its nodes', checked where it runs)."""
        return True

    def final_status(self, info: Info, final: str) -> str:
        """The status a final event the run wrote gives while the place may still say otherwise: a run
        that took a scheduler's signal for a stop is `running` until the scheduler says how its job
        ended (default: the event's status, as written)."""
        return final

    def reason(self, info: Info) -> str:
        """Why the run waits, in the place's words ("" when it does not wait, or the place says none)."""
        return ""

    def row_fields(self, info: Info, status: str, events: list[dict[str, Any]]) -> dict[str, Any] | None:
        """What an `ls` row shows of the place, under its `info_key` (None: nothing)."""
        return None

    def waits_for(self, info: Info) -> list[str]:
        """What holds what a waiting run waits for, one line each, in the place's words (a scheduler's jobs
        on the nodes it waits for); [] when it does not wait, or the place cannot say."""
        return []


@dataclass(frozen=True)
class Registration:
    """A place known by name: where its readers' half lives, and how run.json and a config name it."""

    name: str
    module: str
    info_key: str | None = None
    section: str | None = None
    #: Where its control half lives (imported only by the control layer, never here).
    control: str = ""


_REGISTERED: list[Registration] = []
_LOADED: dict[str, Place] = {}


def register(name: str, module: str | None = None, info_key: str | None = None,
             section: str | None = None, control: str | None = None) -> Registration:
    """Make a place known (the newest is asked first; `local`, which holds every run, is the first
    registered). `module` holds its `PLACE` (default: `trainconsole.protocol.places.<name>`), `control`
    its control half's (default: `trainconsole.control.places.<name>`)."""
    entry = Registration(name, module or f"{__name__}.{name}", info_key, section,
                         control or f"trainconsole.control.places.{name}")
    _REGISTERED[:] = [e for e in _REGISTERED if e.name != name] + [entry]
    _LOADED.pop(name, None)
    return entry


def unregister(name: str) -> None:
    """Forget a place (a test's own)."""
    _REGISTERED[:] = [e for e in _REGISTERED if e.name != name]
    _LOADED.pop(name, None)


def named(name: str) -> Place:
    """The registered place of this name (KeyError if none)."""
    if name not in _LOADED:
        _LOADED[name] = importlib.import_module(registration(name).module).PLACE
    return _LOADED[name]


def registration(name: str) -> Registration:
    """How the place of this name was registered (KeyError if it was not)."""
    found = next((e for e in _REGISTERED if e.name == name), None)
    if found is None:
        raise KeyError(name)
    return found


def names() -> list[str]:
    """Every registered place's name, in the order they are asked (newest first)."""
    return [e.name for e in reversed(_REGISTERED)]


def of(info: Info) -> Place:
    """The place run.json says the run lives in: the newest registered place that holds it (a place
    with an `info_key` is imported only for a run that has the key)."""
    for entry in reversed(_REGISTERED):
        if entry.info_key is not None and entry.info_key not in info:
            continue
        place = named(entry.name)
        if place.holds(info):
            return place
    return named("local")


def for_config(config: Info) -> Place:
    """The place a new run of this config goes to: the newest place its sections ask for, else here."""
    for entry in reversed(_REGISTERED):
        if entry.section is not None and entry.section in config and named(entry.name).takes(config):
            return named(entry.name)
    return named("local")


def with_section(section: str) -> Place | None:
    """The place whose config section this is (None: no place's)."""
    entry = next((e for e in reversed(_REGISTERED) if e.section == section), None)
    return None if entry is None else named(entry.name)


def asked_by(config: Info) -> list[Place]:
    """The places whose sections the config has."""
    return [named(e.name) for e in reversed(_REGISTERED) if e.section is not None and e.section in config]


def alive(run_path: str | os.PathLike[str], info: Info, now: float | None = None) -> bool | None:
    """Whether the run's current process lives, as its place judges it: by pid and start time here, by
    heartbeat from another host, with its job for a scheduler's run (None: not known yet)."""
    return of(info).alive(run_path, info, now)


register("local")
register("host")
register("slurm", info_key="slurm", section="slurm")
