"""Text as a reader sees it: terminal escape codes and backspaces taken out (stdlib only, pure).

Keras draws its bar with ANSI colours and `\\b`, rich and colorama colour their tracebacks: a cause, a
hint or a metric is read from (and shown as) the plain text.
"""

from __future__ import annotations

import re

#: CSI sequences (`\x1b[1m`, `\x1b[2K`, `\x1b[A`), OSC sequences (titles, links) and lone escapes.
ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])|[\b\x07]")


def plain(text: str) -> str:
    """TEXT without its terminal escape codes, backspaces and bells."""
    return ESCAPES.sub("", text) if ("\x1b" in text or "\b" in text or "\x07" in text) else text
