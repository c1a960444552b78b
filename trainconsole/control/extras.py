"""Which optional part (a pip extra of trainconsole) an action needs, and the one line when it is missing.

The core (the console, the CLI, script runs, the browser-less views) needs none; the built-in trainer,
searches, TensorBoard export and `serve` each come with an extra. Whether a package is there is asked
with `importlib.util.find_spec`, which finds it without importing it (the console stays light).
"""

from __future__ import annotations

import importlib.util
from typing import Any

#: Each extra and the import names it brings that trainconsole uses.
EXTRAS = {
    "train": ("torch", "torchvision", "sklearn"),
    "tune": ("ray", "optuna", "hyperopt", "bayes_opt"),
    "tensorboard": ("tensorboard",),
    "serve": ("textual_serve", "aiohttp"),
}
#: What a search needs beyond Ray, by searcher (`tune.search`).
SEARCHERS = {"optuna": "optuna", "hyperopt": "hyperopt", "bayesopt": "bayes_opt"}


def installed(module: str) -> bool:
    """Whether `module` can be imported here (found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(what: str, extra: str, modules: tuple[str, ...] | None = None) -> str | None:
    """The one line saying that `what` needs `extra`, naming the first of its modules not installed;
    None when all are there."""
    absent = next((m for m in (modules or EXTRAS[extra]) if not installed(m)), None)
    if absent is None:
        return None
    return (f"{what} needs the '{extra}' extra ({absent} is not installed): "
            f"pip install 'trainconsole[{extra}]'")


def needs(config: dict[str, Any], kind: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(what, extra, modules) a config of this kind needs: none for a script run. A search names the
    `tune` extra, which brings the trainer's too."""
    if kind == "script":
        return []
    if kind == "tune":
        search = config["tune"]["search"]
        searcher = (SEARCHERS[search],) if search in SEARCHERS else ()
        found = [(f"a {search} search", "tune", ("ray", *searcher, *EXTRAS["train"]))]
    else:
        found = [("the built-in trainer", "train", EXTRAS["train"])]
    if config["strategy"].get("ray_address"):
        found.append(("ddp on a Ray cluster", "tune", ("ray",)))
    if config["train"].get("tensorboard"):
        found.append(("train.tensorboard", "tensorboard", EXTRAS["tensorboard"]))
    return found


def first_missing(config: dict[str, Any], kind: str) -> str | None:
    """The line for the first extra this config needs and lacks (None if it has them all)."""
    return next((line for what, extra, modules in needs(config, kind)
                 if (line := missing(what, extra, modules))), None)
