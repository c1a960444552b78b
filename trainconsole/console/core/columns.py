"""The runs table's columns, each one's value for a run, and how a cell is cut to fit: what the first frame's
empty table needs, apart from the board (so it is drawn before the board's modules are loaded)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainconsole.console.core.run_state import RunState

#: The runs table's columns: key and header.
COLUMNS = (
    ("run", "run"), ("status", "status"), ("strategy", "strategy"), ("epoch", "epoch"),
    ("loss", "loss"), ("acc", "acc"), ("rate", "smp/s"), ("elapsed", "elapsed"),
)
#: The column added after those when the home holds runs of more than one host.
HOST_COLUMN = ("host", "host")


def trials(run: RunState) -> int | None:
    """A search's trial count (None: not a search, or no trial yet): the run index's for an ended search
    whose log is not read."""
    if run.search is not None and run.search.trials:
        return len(run.search.trials)
    return None if run.trials_summary is None else run.trials_summary[0]


def epoch(run: RunState) -> int | None:
    """The epoch column's value: the run's epoch, a search's trial count (`3 tr`)."""
    count = trials(run)
    return run.epoch if count is None else count


def acc(run: RunState) -> float | None:
    """The acc column's value: the run's latest validation accuracy, a search's best trial's metric."""
    if run.search is not None and run.search.trials:
        leader = run.search.leader()
        return None if leader is None else leader.best
    return run.val_acc if run.trials_summary is None else run.trials_summary[1]


#: Each column's value for a run (None: it has none, and sorts last): what its cell shows, formatted by
#: `board.row`, and what a sort by the column orders by (`arrangement`), from this one definition.
VALUES: dict[str, Callable[[RunState, float], Any]] = {
    "run": lambda run, now: (run.name or run.id).lower(), "status": lambda run, now: run.status,
    "strategy": lambda run, now: run.strategy or None, "epoch": lambda run, now: epoch(run),
    "loss": lambda run, now: run.loss, "acc": lambda run, now: acc(run),
    "rate": lambda run, now: run.samples_per_s, "elapsed": lambda run, now: run.elapsed(now),
    "host": lambda run, now: run.host,
}
#: Between a run cell's label and its tags (the table draws the tags dimmed, after the name).
TAGS_SEP = "\t"


def middle(text: str, width: int) -> str:
    """Shorten from the middle, so both a run's name and the random end of its id stay readable."""
    width = max(width, 3)
    if len(text) <= width:
        return text
    head = (width - 1) - (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


#: The most characters a number may take in a runs-table cell (its column widens to the widest shown); a
#: longer figure is shown shorter (fewer digits, `2k`), never cut.
FIGURE_WIDTHS = {"epoch": 9, "loss": 6, "acc": 6, "rate": 6, "elapsed": 7}
#: Thousands' suffixes of a short count (`2k`, `1.2M`).
SUFFIXES = (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))


def figure(value: float, width: int, fmt: str = ".4g") -> str:
    """`value` in `fmt` if that fits `width`, else with as many significant digits as fit (`3.27e-5` for
    3.269e-05 in 7): a shorter figure, never a cut one. The shortest form if none fits."""
    text = format(value, fmt)
    if len(text) <= width or value != value or value in (float("inf"), float("-inf")):
        return text
    for digits in range(4, 0, -1):
        for text in (format(value, f".{digits}g"), _exponent(value, digits)):
            if len(text) <= width:
                return text
    return _exponent(value, 1)


def _exponent(value: float, digits: int) -> str:
    """`value` as `3.27e-5`: `digits` significant digits, the exponent without its sign's `+` and zeros."""
    mantissa, exponent = format(value, f".{digits - 1}e").split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def count(value: float, width: int, fmt: str = ",.0f") -> str:
    """A count in `fmt` if that fits `width`, else short (`2k`, `12.3k`, `1.2M`): never cut. The shortest
    form if none fits."""
    text = format(value, fmt)
    if len(text) <= width or value != value or abs(value) == float("inf"):
        return text
    shortest = text
    for suffix, scale in SUFFIXES:
        for digits in (3, 2, 1):
            short = format(value / scale, f".{digits}g")
            if "e" in short:  # (over 999 of this unit: the next unit's)
                break
            if len(short) + 1 <= width:
                return short + suffix
            shortest = min(shortest, short + suffix, key=len)
    return min(shortest, figure(value, width, ".3g"), key=len)  # (past the last unit: `1.2e15`)


def fraction(done: int, total: int | None, width: int) -> str:
    """`327/2000`, or `327/2k` where that does not fit `width` (the epoch and the epochs in all)."""
    text = f"{done}" if total is None else f"{done}/{total}"
    if len(text) <= width:
        return text
    if total is None:
        return count(done, width, "d")
    whole = f"{done}/{count(total, width - len(str(done)) - 1, 'd')}"  # the epoch whole if it can be
    if len(whole) <= width:
        return whole
    half = (width - 1) // 2
    return f"{count(done, half, 'd')}/{count(total, half, 'd')}"
