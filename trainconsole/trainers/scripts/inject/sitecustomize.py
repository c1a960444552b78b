"""trainconsole's probe loader, run by Python at start-up in a script run's processes (stdlib only).

The runner puts this folder first on PYTHONPATH, so every Python process of the run (the script, torchrun's
ranks, spawned workers) runs this module at start-up. It leaves no trace a script could see: it takes this
folder back off `sys.path`, runs the `sitecustomize` the environment had (the next one on `sys.path`), and
installs the probe (`_trainconsole_probe.py` beside it) only once the script imports torch itself. It
never imports torch, so a script without torch runs exactly as before. Any error of its own is swallowed:
the script must run whatever happens here.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "_trainconsole_probe.py")
ENV_CHANNEL = "TRAINCONSOLE_PROBE_DIR"


def _ours(entry: str) -> bool:
    try:
        return os.path.abspath(entry or os.curdir) == HERE
    except (TypeError, ValueError):
        return False


def _run_next_sitecustomize() -> None:
    """Run the environment's own `sitecustomize`, the one this module shadows, as Python would have."""
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


class _TorchWatch:
    """A `sys.meta_path` finder that only waits for `import torch`: it finds nothing itself, and once
    torch's own import has run, installs the probe and leaves."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """For `torch` alone: torch's own spec, with a loader that installs the probe after it ran."""
        if name != "torch":
            return None
        self.leave()
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec

    def leave(self) -> None:
        """Off `sys.meta_path`: the probe is installed once per process."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _Loader:
    """torch's loader, which installs the probe once torch is imported, then gives its place back."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: Any) -> Any:
        """As torch's loader does."""
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        """Run torch's `__init__`, put its own loader back, install the probe."""
        spec = module.__spec__
        if spec is not None:
            spec.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        _install(module)


def _install(torch: Any) -> None:
    try:
        spec = importlib.util.spec_from_file_location("_trainconsole_probe", PROBE)
        probe = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(probe)  # type: ignore[union-attr]
        probe.install(torch, os.environ[ENV_CHANNEL])
    except Exception as e:  # noqa: BLE001 - the probe must never stop the script
        sys.stderr.write(f"trainconsole: the probe is off in this process ({type(e).__name__}: {e})\n")


def _main() -> None:
    sys.path[:] = [p for p in sys.path if not _ours(p)]
    try:
        _run_next_sitecustomize()
    finally:
        if os.environ.get(ENV_CHANNEL) and "torch" in sys.modules:  # the other sitecustomize took it
            _install(sys.modules["torch"])
        elif os.environ.get(ENV_CHANNEL):
            sys.meta_path.insert(0, _TorchWatch())


_main()
