"""`?` lists each key once where it acts (issue 38: `2` was listed twice, as the plot pane and as a search's
trials)."""

from __future__ import annotations

from pathlib import Path

from conftest import demo_config

from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.help_screen import HelpScreen
from trainconsole.console.services.gpu import SimulatedGpus


def test_each_key_is_listed_once_in_each_context(home: Path, tmp_path: Path) -> None:
    app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path=demo_config(tmp_path))
    rows = HelpScreen.of(app.help_sections()).rows
    keys = [(context, key) for context, key, _ in rows]
    assert ("dashboard", "2") in keys
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []
    (plot,) = [what for context, key, what in rows if (context, key) == ("dashboard", "2")]
    assert "leaderboard" in plot  # what 2 shows for a search is still said, on its one line
