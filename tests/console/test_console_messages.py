"""What the console says is true: a toast shows its words as written (a missing extra's `pip install
'trainconsole[train]'` kept its `[train]`), and a read-only console's footer lists only keys that work
(each changing key, pressed anyway, is still refused in words); `x` on a finished search says it has
nothing to stop instead of "asked trial #n to stop; the search goes on"."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import make_app, settle, until
from rich.console import Console
from test_leaderboard_pane import TUNE, tune_home
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast

from trainconsole import protocol
from trainconsole.control import extras


def plain(renderable: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return " ".join(console.export_text().split())


def toasts(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [plain(toast.render()) for toast in app.screen.query(Toast)]


def footer(app) -> str:  # type: ignore[no-untyped-def]
    return " ".join(plain(key.render()) for key in app.main.query(FooterKey))


async def test_a_missing_extra_is_named_whole_in_the_toast(fixture_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "installed", lambda module: module != "torch")
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("l")
        shown = await until(pilot, lambda: [t for t in toasts(app) if "extra" in t], 10, "the toast")
        assert "pip install 'trainconsole[train]'" in shown[0], shown


async def test_a_read_only_footer_lists_only_keys_that_work(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    app.read_only = True
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        keys = footer(app)
        assert "Mark" in keys and "Filter" in keys, keys  # watching keys stay
        for gone in ("Launch", "Stop", "Kill", "Resume"):
            assert gone not in keys, keys
        await pilot.press("l")
        await until(pilot, lambda: any("launch: refused, this session is read-only" in n.message
                                       for n in app._notifications), 10, "l refused in words")


async def test_a_console_that_can_act_lists_its_changing_keys(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        keys = footer(app)
        assert all(word in keys for word in ("Launch", "Stop", "Kill", "Resume")), keys


async def test_x_on_a_finished_search_says_so_and_asks_nothing(tmp_path: Path) -> None:
    home = tune_home(tmp_path / "home", finished=True)
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.selection.selected == TUNE
        await pilot.press("x")
        said = await until(pilot, lambda: [n.message for n in app._notifications if "trial" in n.message], 10,
                           "what x said")
    assert said == ["the search is finished: a trial stops only while its search runs"], said
    assert not protocol.trial_stops_requested(home / "runs" / TUNE)
