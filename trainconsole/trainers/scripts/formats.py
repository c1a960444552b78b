"""Which reader reads a line: a structured format's, exactly, before the printed-line guesses (pure).

Formats are found without configuration: each reader claims only lines of its own shape (a JSON object,
a Trainer dict, a Keras bar or `Epoch k/N`), and every other line is read by `lines.parse`. The user's
`[script] patterns` add to the guesses.
"""

from __future__ import annotations

import re

from . import hf_lines, json_lines, keras_lines
from .lines import parse
from .parsed import Parsed
from .plain import plain

READERS = (json_lines.read, hf_lines.read, keras_lines.read)


def read(line: str, patterns: list[re.Pattern[str]] = (), evaluating: bool = False,  # type: ignore[assignment]
         trained: bool = False) -> Parsed:
    """What LINE says, by the first reader that knows its shape (EVALUATING, TRAINED: see `lines.parse`)."""
    text = plain(line)
    first = text.lstrip()[:1]
    if first == "{" or first == "E" or first.isdigit():  # the only shapes the readers claim
        for reader in READERS:
            parsed = reader(text)
            if parsed is not None:
                return parsed
    return parse(text, patterns, evaluating, trained)
