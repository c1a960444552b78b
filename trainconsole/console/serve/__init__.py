"""`trainconsole serve`: the same console in a browser tab (textual-serve's client and protocol), private by
default. `options` (the command line, checked), `security` (tokens, cookie, Host and Origin), `server`
(the aiohttp routes behind them), `sessions` (a console process per tab), `main` (listen, print the URL,
stop cleanly). Only `options` and `security` are imported before `serve` runs (no aiohttp for the rest).
"""
