"""CPU milliseconds per run of `index.summarize` (what the first listing of a home does for each run),
in-process, for a checkout's code: `PYTHONPATH=TREE python benchmarks/index_summarize.py TREE N RUNS_DIR`.
Run it for the baseline's tree and this one alternately (the baseline's protocol lived in trainers/).

    for t in /tmp/base /work/main /tmp/base /work/main; do
        (cd / && PYTHONPATH=$t /work/main/.venv/bin/python \
            /work/main/benchmarks/index_summarize.py $t 2000 HOME/runs)
    done
"""

from __future__ import annotations

import importlib
import os
import sys
import time


def main() -> None:
    """Summarize the first N runs of RUNS_DIR and print the CPU milliseconds per run."""
    tree, count, runs_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sys.path.insert(0, tree)
    moved = os.path.isdir(os.path.join(tree, "trainconsole", "protocol"))  # (the layout of 843c90b on)
    protocol, control = ("protocol", "control") if moved else ("trainers.protocol", "console.control")
    index = importlib.import_module(f"trainconsole.{protocol}.index")
    runs = importlib.import_module(f"trainconsole.{control}.runs")
    paths = sorted(os.listdir(runs_dir))[:count]
    start = time.process_time()
    for name in paths:
        index.summarize(index.RunDir(os.path.join(runs_dir, name)), runs.status)
    print(f"{index.__file__}: {(time.process_time() - start) / len(paths) * 1000:.3f} ms CPU a run")


if __name__ == "__main__":
    main()
