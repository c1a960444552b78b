"""A tab's console started by a `serve` run from a folder holding a `trainconsole/` package of the user's
own: the console is ours (started with `-P`, that folder is not on its sys.path), and it draws."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from serve_helpers import Served, alive, wait_gone

SHADOW = 'raise SystemExit("the user\'s own trainconsole package was imported")\n'


async def test_a_trainconsole_folder_where_serve_runs_does_not_shadow_the_tabs_consoles(
        module_home: Path, tmp_path: Path) -> None:
    for package in ("trainconsole", "trainconsole/console"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(SHADOW)
    served = Served(module_home, cwd=tmp_path)
    try:
        assert served.url is not None
        ws_url = served.base.replace("http", "ws", 1) + "ws?width=100&height=30"
        async with aiohttp.ClientSession() as http:
            async with http.get(served.url) as page:
                (morsel,) = page.cookies.values()
            origin = f"http://{aiohttp.client.URL(served.url).raw_authority}"
            async with http.ws_connect(ws_url, headers={"Cookie": f"{morsel.key}={morsel.value}",
                                                        "Origin": origin}) as ws:
                drawn = b""
                while b"new run" not in drawn:  # the setup dashboard's title: our console drew
                    message = await ws.receive(timeout=60)
                    assert message.type == aiohttp.WSMsgType.BINARY, (message, drawn[-400:])
                    drawn += message.data
                (console,) = served.consoles()
                assert console.cmdline()[1:] in (["-P", "-m", "trainconsole.console"],  # (or serve's spare)
                                                 ["-P", "-m", "trainconsole.console.serve.spare"])
                assert alive(console.pid)
        wait_gone(console.pid)
    finally:
        served.stop()
