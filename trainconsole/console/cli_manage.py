"""The CLI's run-management commands: rm, restore, purge, prune, tag, note (and what `ls` gains: a filter,
the trash). Each parses, picks runs and prints; the acting and refusing is `Control`'s."""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from trainconsole.protocol.meta import tags_of
from trainconsole.protocol.run_row import ENDED, LIVE

from . import export
from .cli_runs import control, fail, find_run, matching, picked

AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def age(text: str) -> float:
    """`30d`, `12h`, `90m`, `2w`, `45s` as seconds (argparse type: a bad one is one line, exit 2)."""
    found = AGE.fullmatch(text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age: a number and s, m, h, d or w (like 30d)")
    return float(found.group(1)) * UNITS[found.group(2)]


def statuses(text: str) -> list[str]:
    """`failed,killed`: statuses of ended runs (argparse type)."""
    wanted = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in wanted if s not in ENDED]
    if bad or not wanted:
        raise argparse.ArgumentTypeError(f"{','.join(bad) or text!r}: one or more of {','.join(ENDED)}")
    return wanted


def add_ls(sub: Any) -> None:
    """`ls [--json] [--filter EXPR] [--trash] [--csv]`."""
    ls = sub.add_parser("ls", help="list runs")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--filter", default="", metavar="EXPR", help="only runs that match (lr<0.1 tag:x ...)")
    ls.add_argument("--trash", action="store_true", help="list the runs in the trash instead")
    ls.add_argument("--csv", action="store_true", help="the table as CSV")


def cmd_ls(args: argparse.Namespace) -> int:
    """`ls [--json] [--filter EXPR] [--trash]`: every run (that matches), its status and latest metrics."""
    from . import cli_render as render

    found = control().trashed() if args.trash else matching(args.filter)
    if args.csv:
        print(ls_csv([s.row for s in found]), end="")
        return 0
    if args.json:  # (bytes as they lie in the index: 70 MB for 100,000 runs, never decoded)
        sys.stdout.flush()
        sys.stdout.buffer.write(render.json_rows(found))
        sys.stdout.buffer.write(b"\n")
        sys.stdout.buffer.flush()
        return 0
    print(render.table([s.row for s in found], empty_ls(args)))
    return 0


def empty_ls(args: argparse.Namespace) -> str:
    """What `ls` says when it lists nothing: of the trash, of a filter, or of a home with no runs."""
    from . import cli_render as render

    if args.trash:
        return "the trash is empty"
    if args.filter and control().all_runs():
        return f"no run matches the filter {args.filter!r}"
    return render.NO_RUNS


def add_parsers(sub: Any) -> None:
    """The management commands (`ls`'s own are `add_ls`'s)."""
    export = sub.add_parser("export", help="runs' metrics (step, epoch, time, loss, val_*, lr, rate, memory)")
    export.add_argument("ids", nargs="+", metavar="ID")
    form = export.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="CSV with a header (the default)")
    form.add_argument("--json", action="store_true", help="JSON lines, one row per line")
    export.add_argument("--every", choices=("step", "epoch"), default="step", help="a row per step or epoch")
    rm = sub.add_parser("rm", help="move runs to the trash in the home (restore brings them back)")
    rm.add_argument("ids", nargs="*", metavar="ID")
    rm.add_argument("--filter", default="", metavar="EXPR", help="every run that matches (as ls --filter)")
    rm.add_argument("--purge", action="store_true", help="delete for good, not to the trash")
    restore = sub.add_parser("restore", help="bring runs back from the trash")
    restore.add_argument("ids", nargs="+", metavar="ID")
    purge = sub.add_parser("purge", help="empty the trash")
    purge.add_argument("--older-than", type=age, default=0.0, metavar="AGE",
                       help="only runs trashed this long ago (30d)")
    prune = sub.add_parser("prune", help="delete checkpoints of ended runs, keeping their events and config")
    prune.add_argument("ids", nargs="*", metavar="ID", help="these runs (default: every ended run)")
    prune.add_argument("--keep", choices=("best", "last", "none"), default="best", help="the checkpoint kept")
    prune.add_argument("--status", type=statuses, default=list(ENDED), metavar="LIST",
                       help="only runs with these statuses (failed,killed,...)")
    prune.add_argument("--older-than", type=age, default=0.0, metavar="AGE", help="ended this long ago (7d)")
    prune.add_argument("--filter", default="", metavar="EXPR", help="only runs that match (as ls --filter)")
    prune.add_argument("--dry-run", action="store_true", help="print what would be freed, delete nothing")
    tag = sub.add_parser("tag", help="add (+name) and remove (-name) tags of a run")
    tag.add_argument("id")
    tag.add_argument("changes", nargs="+", metavar="+TAG|-TAG")
    note = sub.add_parser("note", help="set a run's note (\"\" removes it)")
    note.add_argument("id")
    note.add_argument("text")


def cmd_rm(args: argparse.Namespace) -> int:
    """`rm ID... [--filter EXPR] [--purge]`: to the trash (or deleted); a live run refuses them all."""
    for run in control().remove(picked(args.ids, args.filter), purge=args.purge):
        print(f"{run.id} deleted" if args.purge else
              f"{run.id} moved to the trash (trainconsole restore {run.id} brings it back)")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """`restore ID...`: runs back from the trash."""
    for run_id in args.ids:
        print(f"{control().restore(run_id).id} restored")
    return 0


def cmd_purge(args: argparse.Namespace) -> int:
    """`purge [--older-than AGE]`: empty the trash."""
    gone = control().purge(args.older_than)
    for run_id, size in gone:
        print(f"{run_id} deleted ({megabytes(size)})")
    print(f"purged {len(gone)} runs, freed {megabytes(sum(s for _, s in gone))}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """`prune [ID...] [--keep best|last|none] [--status ...] [--older-than AGE] [--dry-run]`."""
    door = control()
    named = [find_run(i) for i in args.ids]
    cutoff = time.time() - args.older_than
    summaries = matching(args.filter, named or None)
    chosen = [door.run(s.id) for s in summaries if _prunable(s.row, args.status, cutoff, bool(named))]
    freed = door.prune(chosen, keep=args.keep, dry_run=args.dry_run)
    verb = "would free" if args.dry_run else "freed"
    for run_id, size in freed:
        print(f"{run_id} {verb} {megabytes(size)}")
    kept = "events, config" if args.keep == "none" else f"{args.keep}.pt, events, config"
    print(f"{len(freed)} runs: {verb} {megabytes(sum(s for _, s in freed))} (kept: {kept})")
    return 0


def _prunable(row: dict[str, Any], wanted: list[str], cutoff: float, named: bool) -> bool:
    if named and row["status"] in LIVE:
        return True  # named outright: Control refuses it with its reason
    ended = row.get("ended_at") or row.get("started_at") or 0.0
    return row["status"] in wanted and ended <= cutoff


def cmd_tag(args: argparse.Namespace) -> int:
    """`tag ID +a -b ...`: add and remove tags; prints the run's tags after."""
    bad = [c for c in args.changes if c[:1] not in "+-" or len(c) < 2]
    if bad:
        fail(f"tag: {bad[0]!r}: write +NAME to add a tag, -NAME to remove one")
    run = find_run(args.id)
    tags = control().tag(run, [c[1:] for c in args.changes if c[0] == "+"],
                             [c[1:] for c in args.changes if c[0] == "-"])
    print(f"{run.id} tags: {' '.join(tags) or '(none)'}")
    return 0


def cmd_note(args: argparse.Namespace) -> int:
    """`note ID TEXT`: set the run's note."""
    run = find_run(args.id)
    control().note(run, args.text)
    print(f"{run.id} note set" if args.text.strip() else f"{run.id} note removed")
    return 0


def megabytes(size: int) -> str:
    """Bytes for people: `12.3 MB`."""
    return f"{size / 1e6:.1f} MB"


def cmd_export(args: argparse.Namespace) -> int:
    """`export ID... [--csv|--json] [--every step|epoch]`: every run's metrics with its id and tags."""
    found, door = [find_run(i) for i in args.ids], control()
    rows = [row for run in found
            for row in export.metric_rows(run.id, tags_of(door.meta(run)), door.events(run), args.every)]
    sys.stdout.write(export.to_json_lines(rows) if args.json else export.to_csv(rows, export.METRICS))
    return 0


def ls_csv(rows: list[dict[str, Any]]) -> str:
    """`ls --csv`: the runs table as CSV."""
    return export.to_csv(export.ls_rows(rows), export.LS_COLUMNS)


COMMANDS = {"ls": cmd_ls, "export": cmd_export, "rm": cmd_rm, "restore": cmd_restore, "purge": cmd_purge,
            "prune": cmd_prune, "tag": cmd_tag, "note": cmd_note}
