"""How every CLI command names runs and says no: one error line (exit 2), the control layer, a run by id,
runs by ids or a filter. Both command modules (`cli`, `cli_manage`) import this, never each other."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trainconsole.control import Control
    from trainconsole.protocol import Event, RunDir
    from trainconsole.protocol.index import Summary

USAGE_ERROR = 2


def fail(message: str) -> NoReturn:
    """Print one error line and exit 2 (the CLI's code for invalid input)."""
    print(f"trainconsole: error: {message}", file=sys.stderr)
    raise SystemExit(USAGE_ERROR)


def control() -> Control:
    """The control layer for this command: every action on a run, and every read of one, goes through it."""
    from trainconsole import protocol
    from trainconsole.control import Control

    return Control(protocol.home())


def find_run(run_id: str) -> RunDir:
    """The run with this id (or a unique prefix or suffix of it); none: exit 2."""
    from trainconsole.protocol.rundir import quoted_id

    door = control()
    run = door.find(run_id)
    if run is None:
        fail(ambiguous(door, run_id) or f"id: no run matches {quoted_id(run_id)} (see trainconsole ls)")
    return run


def ambiguous(door: Control, run_id: str) -> str | None:
    """The line for an id prefix or suffix that several runs share (`find` takes one only when a single
    run has it), naming them; None when fewer do."""
    from trainconsole.protocol.rundir import quoted_id

    hits = [r.id for r in door.all_runs() if r.id.startswith(run_id) or r.id.endswith(run_id)]
    if not run_id or len(hits) < 2:
        return None
    more = f", and {len(hits) - 3} more" if len(hits) > 3 else ""
    return (f"id: {quoted_id(run_id)} is ambiguous: it begins or ends {len(hits)} runs' ids "
            f"({', '.join(hits[:3])}{more}); give more of it")


def matching(expr: str, found: list[RunDir] | None = None) -> Sequence[Summary]:
    """The index summaries of the runs (all, or `found`) that pass a filter (a bad one: exit 2)."""
    from .filters import FilterError, parse

    try:
        wanted = parse(expr)
    except FilterError as e:
        fail(str(e))
    return control().summaries(found, wanted.matches if wanted.terms else None)


def picked(ids: list[str], expr: str) -> list[RunDir]:
    """The runs named by ids and/or a filter (nothing named: exit 2)."""
    if not ids and not expr:
        fail("id: name one or more runs, or --filter EXPR (see trainconsole ls)")
    found = [find_run(i) for i in ids]
    if expr:
        door = control()
        found = [door.run(s.id) for s in matching(expr, found or None)]
    return list({r.id: r for r in found}.values())


def follow(run: RunDir, skip: int = 0) -> int:
    """`--wait`: show the run's progress until it ends, after its first `skip` events (a resumed run's
    earlier ones); 0 only if it finished."""
    from . import cli_render

    progress = cli_render.Progress(sys.stderr)
    seen = 0

    def show(event: Event) -> None:
        nonlocal seen
        seen += 1
        if seen > skip:
            progress.show(event)

    state = control().wait(run, on_event=show)
    progress.close(state)
    return 0 if state == "finished" else 1
