"""`trainconsole`: the console with no arguments, and a headless twin for every action."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from trainconsole import (
    protocol,  # (its names load on first use: the console's first frame needs none)
)
from trainconsole.protocol.launch import reach_launch_dir

from .cli_runs import USAGE_ERROR, control, fail, find_run, follow, picked

if TYPE_CHECKING:
    from trainconsole.protocol.tune_config import load_tune

    from . import cli_render as render

__all__ = ["USAGE_ERROR", "build_parser", "fail", "main"]
#: The options of `trainconsole` with no command (the console itself); any other word builds the parser.
CONSOLE_OPTIONS = {"--read-only", "--bell"}


class Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line on stderr with exit code 2."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def positive_int(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


class Version(argparse.Action):
    """`--version`: the installed package's version (looked up only when asked: the console's first
    frame does not wait for package metadata)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"trainconsole {version('trainconsole')}")
        except PackageNotFoundError:
            print("trainconsole (not installed as a package)")
        raise SystemExit(0)


def build_parser() -> Parser:
    """The argument parser for every subcommand."""
    from .serve import options as serve_options

    parser = Parser(prog="trainconsole", description="Launch, watch and kill PyTorch training runs. "
                    "With no command, opens the console (a terminal app); each command below is its "
                    "headless twin.")
    parser.add_argument("--version", action=Version)
    parser.add_argument("--read-only", action="store_true",
                        help="the console only watches: launch, stop, kill, resume and the form are refused")
    parser.add_argument("--bell", action="store_true", default=None,
                        help="ring the terminal's bell when a run ends or warns (or TRAINCONSOLE_BELL=1)")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    _add_launches(sub)
    _add_lifecycle(sub)
    from . import cli_devices, cli_examples, cli_manage, cli_trials

    cli_trials.add_parsers(sub)
    cli_manage.add_parsers(sub)
    COMMANDS.update(cli_manage.COMMANDS, **cli_trials.COMMANDS)
    cli_examples.add_parser(sub)
    COMMANDS.update(cli_examples.COMMANDS)
    COMMANDS["devices"] = cli_devices.add_parser(sub)
    serve_options.add_options(sub.add_parser("serve", help="the console in a browser (a private URL)"))
    return parser


def _add_launches(sub: Any) -> None:
    """`run` and `tune`: a config (or --demo), overrides, a name, --wait, Slurm's options."""
    from . import run_options, slurm_options

    for name, help_text in (("run", "start a training run"), ("tune", "start a tuning run")):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("config", nargs="?", help="TOML config file")
        cmd.add_argument("--demo", action="store_true", help="the shipped demo config (see `examples DIR`)")
        cmd.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
        cmd.add_argument("--name", default="", help="a name for the run")
        cmd.add_argument("--wait", action="store_true", help="block until it ends; exit 0 only on success")
    run_options.add_options(sub.choices["run"])
    for name in ("run", "tune"):
        slurm_options.add_options(sub.choices[name])
    sub.choices["tune"].add_argument("--ray-address", default="", metavar="ADDR",
                                     help="join this Ray cluster (HOST:PORT or auto) instead of a local Ray")


def _add_lifecycle(sub: Any) -> None:
    """`ls`, `stop`, `kill`, `resume`, `trials`, `compare` and `logs`."""
    from . import cli_manage

    cli_manage.add_ls(sub)
    for name in ("stop", "kill"):
        sub.add_parser(name, help=f"{name} runs").add_argument("id", nargs="*", metavar="ID")
        sub.choices[name].add_argument("--filter", default="", metavar="EXPR",
                                       help="every run that matches (as ls --filter)")
    sub.add_parser("resume", help="resume a run").add_argument("id")
    sub.choices["resume"].add_argument("--epochs", type=positive_int, metavar="N",
                                       help="a finished training run: train on to N epochs in all")
    sub.choices["resume"].add_argument("--wait", action="store_true",
                                       help="block until it ends; exit 0 only on success")
    from .slurm_options import add_resume_options

    add_resume_options(sub.choices["resume"])
    sub.choices["stop"].add_argument("--grace", type=float, default=30.0, metavar="SECONDS",
                                     help="kill the run if it has not stopped after this long (default 30)")
    trials = sub.add_parser("trials", help="a search's trials ranked, with parameter importance")
    trials.add_argument("id")
    trials.add_argument("--json", action="store_true")
    compare = sub.add_parser("compare", help="runs side by side: the config keys that differ, results, cost")
    compare.add_argument("ids", nargs="+", metavar="ID")
    compare.add_argument("--json", action="store_true")
    compare.add_argument("--all", action="store_true", help="every config key, not only those that differ")
    logs = sub.add_parser("logs", help="show a run's events")
    logs.add_argument("id")
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing until the run ends")
    logs.add_argument("--json", action="store_true", help="events as JSON lines, exactly as logged")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `trainconsole` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if set(argv) <= CONSOLE_OPTIONS:  # the console: its first frame waits for no parser of the commands
        return open_console("--read-only" in argv, True if "--bell" in argv else None)
    script_args: list[str] = []
    if argv[:1] == ["run"] and "--" in argv:  # `run --script PATH -- ARGS...`: the script's own arguments
        argv, script_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    if argv[:1] == ["tag"] and len(argv) > 2 and not argv[1].startswith("-"):
        argv.insert(2, "--")  # `tag ID +a -b`: a -b is a tag to remove, not an option
    args = build_parser().parse_args(argv)
    args.script_args = script_args
    if args.command is None:
        return open_console(args.read_only, args.bell)
    _import_commands()
    # Plug-ins named in configs resolve from the working directory, after the installed packages.
    reach_launch_dir()
    try:
        return COMMANDS[args.command](args)
    except (protocol.ConfigError, Refused) as e:
        fail(str(e))
    except KeyboardInterrupt:
        print("\ninterrupted; runs keep going in the background", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `logs ID | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 0


def _import_commands() -> None:
    """The headless commands' modules (psutil, subprocess, the tune schema), imported only when a command
    runs: the console's first frame waits for none of them."""
    global load_tune, render, Refused
    from trainconsole.control import Refused
    from trainconsole.protocol.tune_config import load_tune

    from . import cli_render as render


def open_console(read_only: bool = False, bell: bool | None = None) -> int:
    """Open the Textual console. No cycle collection until its first frame is out (the app turns it on
    again): Textual's imports and first screen make many objects and free none (~10 ms of collections)."""
    import gc

    gc.disable()
    try:
        from .app import TrainConsole
    except ImportError:
        fail("the console is not available yet; use a subcommand (see trainconsole --help)")
    TrainConsole(read_only=read_only, bell=bell).run()
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """`run CONFIG [--set ...] [--wait]` or `run --script PATH [-- ARGS]`: print the new run's id; with
    --wait, follow it to the end."""
    from . import run_options
    from .cli_examples import demo_config

    args.config = demo_config(args, "run")
    from .slurm_options import slurm_sets

    args.set = args.set + slurm_sets(args)
    config, _ = run_options.config_for(args)
    run = control().launch(config, name=args.name)
    print(run.id, flush=True)
    return follow(run) if args.wait else 0


def cmd_tune(args: argparse.Namespace) -> int:
    """`tune CONFIG [--set ...] [--ray-address ADDR] [--wait]`: start a search (checked before Ray starts,
    nothing created when it is invalid); print its run id."""
    from .slurm_options import slurm_sets

    sets = args.set + ([f"tune.ray_address={json.dumps(args.ray_address)}"] if args.ray_address else [])
    from .cli_examples import demo_config

    config = demo_config(args, "tune")
    if config is None:
        fail("config: a TOML config file is required (or --demo)")
    sets += slurm_sets(args)
    run = control().launch(load_tune(config, sets), name=args.name)
    print(run.id, flush=True)
    return follow(run) if args.wait else 0


def cmd_stop(args: argparse.Namespace) -> int:
    """`stop ID... [--filter EXPR]`: ask the runs to checkpoint and stop (all at once); kill any that does
    not within the grace period."""
    from concurrent.futures import ThreadPoolExecutor

    found = picked(args.id, args.filter)
    if not found:
        print("trainconsole: no run matches the filter", file=sys.stderr)
        return 0
    door = control()
    before = [door.status(run) for run in found]
    if not args.grace >= 0:
        fail(f"--grace: must be a number of seconds >= 0 (got {args.grace})")
    with ThreadPoolExecutor(max_workers=len(found)) as pool:
        states = list(pool.map(lambda run: _unless_unreachable(door.stop, run, grace=args.grace), found))
    for run, was, state in zip(found, before, states, strict=True):
        if isinstance(state, Exception):  # Slurm could not be reached: nothing done, nothing recorded
            print(f"trainconsole: {run.id}: {state}", file=sys.stderr)
        else:
            print(f"{run.id} {state}" + ("" if was == "running" else " (was not running)"))
    return 1 if any(isinstance(state, Exception) for state in states) else 0


def _unless_unreachable(action: Any, run: Any, **kwargs: Any) -> Any:
    """The action's result, or the refusal that kept it from being done (a Slurm run's controller that
    does not answer, an scancel that failed: exit 1 after the other runs' results)."""
    try:
        return action(run, **kwargs)
    except Refused as e:
        return e


def cmd_kill(args: argparse.Namespace) -> int:
    """`kill ID... [--filter EXPR]`: SIGKILL each run and every process it started."""
    door, failed = control(), False
    found = picked(args.id, args.filter)
    if not found:
        print("trainconsole: no run matches the filter", file=sys.stderr)
    for run in found:
        done = _unless_unreachable(door.kill, run)
        if isinstance(done, Exception):
            print(f"trainconsole: {run.id}: {done}", file=sys.stderr)
            failed = True
        elif done.survivors:
            print(f"trainconsole: could not kill pids {done.survivors} of {run.id}", file=sys.stderr)
            failed = True
        else:
            print(f"{run.id} {door.status(run)}")
    return 1 if failed else 0


def cmd_resume(args: argparse.Namespace) -> int:
    """`resume ID [--wait]`: continue a run that ended from its last checkpoint; print its id; with --wait,
    follow it to its new end (its earlier events not shown again)."""
    from .slurm_options import resume_sets

    run = find_run(args.id)
    before = len(control().events(run)) if args.wait else 0
    try:
        control().resume(run, epochs=args.epochs, slurm=resume_sets(args))
    except protocol.RunBusy as e:
        fail(str(e))
    except FileNotFoundError as e:
        fail(f"id: {e}")
    print(run.id, flush=True)
    return follow(run, skip=before) if args.wait else 0


def cmd_logs(args: argparse.Namespace) -> int:
    """`logs ID [--follow] [--json]`: print the run's events, as text or exactly as logged."""
    run = find_run(args.id)
    reader = control().reader(run)
    show = (lambda line: line.decode(errors="replace")) if args.json else render.event_line
    while True:
        # Look at the status before reading, so that the events written as the run ends still print.
        more = args.follow and control().status(run) in protocol.run_row.LIVE
        for line in reader.read_lines():
            print(show(line), flush=True)
        if not more:
            if not args.json and control().status(run) == "lost":
                print(render.lost_line(run), flush=True)
            return 0
        time.sleep(0.2)


def cmd_trials(args: argparse.Namespace) -> int:
    """`trials ID [--json]`: a search's trials ranked by its metric, and each parameter's importance."""
    from .services import search_report

    run = find_run(args.id)
    search = search_report.search_of(run.id, control().events(run))
    if search is None:
        fail(f"id: {run.id} is not a tune run (see trainconsole ls: kind tune)")
    if args.json:
        print(json.dumps(search_report.report(run, search), indent=1))
    else:
        print(search_report.text(search))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """`compare ID ID... [--json] [--all]`: the runs' results and cost, and the config keys that differ."""
    from .core import compare
    from .services import compare_runs

    found = [find_run(i) for i in args.ids]
    if len({r.id for r in found}) < 2:
        fail("id: compare takes two or more different runs (see trainconsole ls)")
    report = with_tags_and_notes(compare.to_json(compare_runs.comparison(control(), found), args.all), found)
    print(json.dumps(report, indent=1) if args.json else compare.text(report))
    return 0


def with_tags_and_notes(report: dict[str, Any], found: list[protocol.RunDir]) -> dict[str, Any]:
    """A compare report whose runs carry their tags and note (from each run's meta.json)."""
    from trainconsole.protocol.meta import tags_of

    door = control()
    marks = {run.id: door.meta(run) for run in found}
    for row in report.get("runs", []):
        meta = marks.get(row.get("id"), {})
        row.update(tags=tags_of(meta), note=str(meta.get("note") or ""))
    return report


def cmd_serve(args: argparse.Namespace) -> int:
    """`serve [--host H] [--port P] [--read-only] [--allow-remote] [--max-sessions N] ...`: the console in a
    browser, one console process per tab, behind a token printed once."""
    from trainconsole.control.extras import missing

    line = missing("serve", "serve")
    if line:
        fail(line)
    from .serve import main as serve
    from .serve import options as serve_options

    return serve.run(serve_options.check(args))


COMMANDS = {
    "run": cmd_run, "tune": cmd_tune, "stop": cmd_stop, "kill": cmd_kill,
    "resume": cmd_resume, "logs": cmd_logs, "trials": cmd_trials,
    "compare": cmd_compare, "serve": cmd_serve,
}
