"""A number shown in a cell of a given width: whole where it fits, else an honest shorter form of it (fewer
significant digits, `3.27e-5`, `2k`), never a cut one. Pure and import-free: the runs table and the
leaderboard format with it."""

from __future__ import annotations

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
