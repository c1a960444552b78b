"""The first `ls --json` of a big home (no run index yet: every run summarized), the warm one and
`ls --filter`, for this tree's code and a baseline's (another checkout, `--base`), alternated in one run
so that each ratio is taken under one load: issue 47's figures, 10,000 runs cold and 100,000 runs cold,
warm and filtered, in one command.

The homes are `many_runs.py`'s: one real digits run (`--source`, else trained once) copied N times with
hard links and a run.json of its own, one run in 100 with a log grown to 3 MB; a run of this version
leaves the summary of its log beside it (`summary.json`), and so does each copy. Each home is built once
and kept under `--homes` (default /tmp/first_ls_homes), so a second run of the benchmark starts at once.
Each tree lists the home through a home of its own whose `runs` is a link to the shared runs (its index
files are its own: an older version's are neither read nor overwritten by the other). Each cold listing
starts with the index files removed. Prints one JSON line per size and case: medians of wall and CPU
seconds (user + system, a forked or pooled process's included), the ratios new / base, then the load.

    git worktree add /tmp/base47 0b9ac78
    .venv/bin/python benchmarks/first_ls.py --base /tmp/base47
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console_common import REPO, machine
from many_runs import LINKS, NEWEST, add_copy, big_copy, index_settle_s, real_run

from trainconsole.protocol import RunDir, index, run_summary

FILTER = "val_acc>0.5 lr<0.1"
#: What is measured: (runs, case, repeats); a case's listing follows the one before it on that home.
PLAN = ((10_000, "cold", 3), (10_000, "warm", 3), (10_000, "filter", 3),
        (100_000, "cold", 1), (100_000, "warm", 3), (100_000, "filter", 3))


def timed(tree: Path, home: Path, runs: int, *args: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its children's included) of one `trainconsole ls --json
    [ARGS]` run from `tree`'s code (every run listed unless a filter is given)."""
    env = {**os.environ, "TRAINCONSOLE_HOME": str(home), "PYTHONPATH": str(tree)}
    code = "import sys; from trainconsole.console.cli import main; sys.argv[0] = 'trainconsole'; main()"
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, "ls", "--json", *args], env=env, cwd="/",
                                stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        listed = len(json.loads(out.read()))
    assert os.waitstatus_to_exitcode(status) == 0 and (listed == runs or args), (listed, runs)
    return seconds, usage.ru_utime + usage.ru_stime


def listing(case: str, tree: Path, home: Path, runs: int) -> tuple[float, float]:
    """One listing: `cold` with the home's index files removed first, `warm` as it is, `filter` with
    `--filter FILTER`."""
    if case == "cold":
        for path in home.glob("index*"):
            path.unlink()
    return timed(tree, home, runs, *(("--filter", FILTER) if case == "filter" else ()))


def home_of(homes: Path, size: int, source: Path) -> Path:
    """The shared home of `size` copies of `source` (built once, then kept: `.ready` says it is whole)."""
    home = homes / f"runs-{size}"
    if (home / ".ready").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    (home / "runs").mkdir(parents=True)
    big = homes / "big"
    if not big.exists():
        big_copy(source, big, 3.0)
        if (source / run_summary.NAME).exists():  # a run of this version leaves its log's summary
            index.keep_log_summary(RunDir(big))
    add_copy(home, source, 0, NEWEST, day="29990101")
    for i in range(1, size):
        # a file takes at most 65,000 links (ext4): a fresh copy of the run per LINKS copies
        copy = source if i < LINKS else homes / f"real-{i // LINKS}"
        if not copy.exists():
            shutil.copytree(source, copy)
        add_copy(home, big if i % 100 == 0 else copy, i, "small-cnn-digits")
    time.sleep(index_settle_s())
    (home / ".ready").touch()
    return home


def tree_home(shared: Path, name: str) -> Path:
    """A home of the tree's own over the shared runs (its `runs` a link to them)."""
    home = shared.with_name(f"{shared.name}-{name}")
    home.mkdir(exist_ok=True)
    if not (home / "runs").exists():
        (home / "runs").symlink_to(shared / "runs")
    return home


def measure(trees: dict[str, Path], shared: Path, runs: int, case: str, repeat: int) -> dict[str, object]:
    """Medians of `repeat` listings of one case per tree, the trees alternating."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for _ in range(repeat):
        for name, tree in trees.items():
            times[name].append(listing(case, tree, tree_home(shared, name), runs))
    row: dict[str, object] = {"runs": runs, "case": case}
    for name, values in times.items():
        row[f"{name}_s"] = round(statistics.median(v[0] for v in values), 3)
        row[f"{name}_cpu_s"] = round(statistics.median(v[1] for v in values), 3)
    if "base" in trees:
        row["ratio_new_to_base"] = round(row["new_s"] / row["base_s"], 3)
        row["cpu_ratio_new_to_base"] = round(row["new_cpu_s"] / row["base_cpu_s"], 3)
    row["each_s"] = {name: [round(v[0], 2) for v in values] for name, values in times.items()}
    row["load"] = round(os.getloadavg()[0], 1)
    return row


def main() -> None:
    """Build (or find) the homes and print one JSON line per size and case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="", help="a checkout of the baseline's code")
    parser.add_argument("--source", default="", help="copy this finished run instead of training one")
    parser.add_argument("--homes", default="/tmp/first_ls_homes", help="where the homes are kept")
    parser.add_argument("--sizes", default="10000,100000", help="only these sizes of PLAN")
    parser.add_argument("--repeat", type=int, default=0, help="repeats of every case (0: PLAN's)")
    args = parser.parse_args()
    trees = {"new": REPO} | ({"base": Path(args.base)} if args.base else {})
    homes = Path(args.homes)
    homes.mkdir(parents=True, exist_ok=True)
    source = Path(args.source) if args.source else homes / "template-run"
    if not source.exists():
        shutil.copytree(real_run(homes / "template", 3), source)
    sizes = {int(s) for s in args.sizes.split(",")}
    for runs, case, repeat in PLAN:
        if runs in sizes:
            shared = home_of(homes, runs, source)
            print(json.dumps(measure(trees, shared, runs, case, args.repeat or repeat)), flush=True)
    print(json.dumps({"load": os.getloadavg(), "machine": machine()}))


if __name__ == "__main__":
    main()
