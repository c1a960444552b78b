"""The CLI's twins of the keys on a search's trials: `stop-trial ID TRIAL` (`x`) and `train-trial ID
[TRIAL]` (`t`). A trial is named by its number (`3` or `#3`, as `trials` shows it) or its trial id."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .cli_runs import control, fail, find_run, follow


def add_parsers(sub: Any) -> None:
    """`stop-trial` and `train-trial`."""
    stop = sub.add_parser("stop-trial", help="stop one trial of a running search (the search goes on)")
    stop.add_argument("id", help="the search (a tune run)")
    stop.add_argument("trial", help="its number (as trials shows it) or trial id")
    train = sub.add_parser("train-trial", help="train a search's trial's config as a run of its own")
    train.add_argument("id", help="the search (a tune run)")
    train.add_argument("trial", nargs="?", default="", help="its number or trial id (default: the best)")
    train.add_argument("--wait", action="store_true", help="block until it ends; exit 0 only on success")


def trial_of(args: argparse.Namespace) -> tuple[Any, Any]:
    """The search named by `args.id` and its trial named by `args.trial` (none: the best); exit 2 with
    the field when either is not there."""
    from .services.search_report import search_of

    run = find_run(args.id)
    search = search_of(run.id, control().events(run))
    if search is None or not search.trials:
        fail(f"id: {run.id} is not a search with trials (see trainconsole ls: kind tune)")
    name = args.trial.removeprefix("#")
    trial = next((t for t in search.trials.values() if name in (t.id, str(t.number))), None) if name else \
        search.leader()
    if trial is None:
        numbers = ", ".join(f"#{t.number}" for t in search.trials.values())
        fail(f"trial: {args.trial!r} is not a trial of {run.id} (its trials: {numbers})"
             if name else f"trial: {run.id} has no best trial yet; name one")
    return run, trial


def cmd_stop_trial(args: argparse.Namespace) -> int:
    """`stop-trial ID TRIAL`: ask the search to stop one trial; the rest of the search goes on."""
    run, trial = trial_of(args)
    from trainconsole.console.core.leaderboard import why_not_stop

    why = why_not_stop(trial, control().status(run))
    if why:
        fail(f"{'id' if why.startswith('the search') else 'trial'}: {run.id}: {why}")
    control().stop_trial(run, trial.id)
    print(f"asked trial #{trial.number} of {run.id} to stop; the search goes on")
    return 0


def cmd_train_trial(args: argparse.Namespace) -> int:
    """`train-trial ID [TRIAL] [--wait]`: train the trial's (or the best trial's) config as a run of its
    own; print the new run's id."""
    from trainconsole.console.core.leaderboard import searched

    run, trial = trial_of(args)
    print(f"training trial #{trial.number}: {searched(trial.config)}", file=sys.stderr)
    new = control().train_trial(run, trial.number, dict(trial.config))
    print(new.id, flush=True)
    return follow(new) if args.wait else 0


COMMANDS = {"stop-trial": cmd_stop_trial, "train-trial": cmd_train_trial}
