"""`trainconsole ls` as text: the columns README promises, size and tags among them."""

from __future__ import annotations

from trainconsole.console import cli_render


def test_ls_text_shows_each_runs_size_and_tags() -> None:
    rows = [{"id": "r1", "status": "finished", "size": 3 << 20, "tags": ["baseline", "lr-sweep"],
             "last": {"epoch": 2, "epochs": 2}, "host": "box-a"},
            {"id": "r2", "status": "lost", "host": "box-b"}]
    header, first, second = cli_render.table(rows).splitlines()
    assert header.split()[-3:] == ["size", "tags", "host"]
    assert first.split()[-4:] == ["3M", "#baseline", "#lr-sweep", "box-a"]
    assert second.split()[-3:] == ["-", "-", "box-b"]
