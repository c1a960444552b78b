"""Error explainers: turn an exception into one line of cause and a short hint for the console.

Stdlib only, so that a run can still explain a failure that happened while importing torch.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .protocol import Config


class TrainerError(Exception):
    """Base class of the errors the trainer raises on purpose; `str()` is already user-facing."""


class NonFiniteLossError(TrainerError):
    """The training loss was NaN or infinite when it was last read (at a `step` event)."""

    def __init__(self, step: int, value: float) -> None:
        self.step, self.value = step, value
        super().__init__(f"training loss is {value} at step {step}")


class CheckpointError(TrainerError):
    """A checkpoint or weights file that is missing, damaged, or not safe to load."""


class DataFilesMissing(TrainerError, FileNotFoundError):
    """A local dataset's files are not where `data.root` says (downloads are disabled)."""


class StrategyUnavailable(TrainerError):
    """The configured strategy or accelerator cannot run here."""


@dataclass(frozen=True)
class Explanation:
    """What the `failed` event says: the cause on one line, a hint ('' when there is no good guess)."""

    cause: str
    hint: str


SHAPE_MARKERS = (
    "mat1 and mat2 shapes cannot be multiplied", "size mismatch", "Expected input batch_size",
    "to have 3 channels", "to have 1 channels", "channels, but got", "Calculated padded input size",
    "Output size is too small", "Kernel size can't be greater", "shape mismatch",
)
OOM_MARKERS = ("out of memory", "can't allocate memory", "DefaultCPUAllocator")
LABEL_MARKERS = ("device-side assert", "out of bounds", "Target -1", "index out of range in self")


def explain(exc: BaseException, config: Config | None = None) -> Explanation:
    """The cause (`Type: first line of the message`) and a hint for an exception raised by a run."""
    from .troubles import disk  # stdlib only, like this module

    if disk.is_disk_full(exc) and not getattr(exc, "hint", ""):  # torch hides ENOSPC ("unexpected pos")
        where = os.environ.get("TRAINCONSOLE_HOME") or os.getcwd()
        return Explanation(cause=disk.cause(exc, where, one_line(exc)), hint=disk.DISK_FULL_HINT)
    own = getattr(exc, "hint", "")  # an error that knows its own fix (TrainerError subclasses)
    hint = own if isinstance(own, str) and own else _hint(exc, config or {})
    cause, where = one_line(exc), plugin_frame(exc, config or {})
    if where:
        cause += f" [in plug-in {where}]"
        hint = f"the error is raised by your plug-in code at {where}" + (f"; {hint}" if hint else "")
    return Explanation(cause=cause, hint=hint)


def plugin_frame(exc: BaseException, config: Config) -> str:
    """`module:factory, file.py line N` for the innermost traceback frame inside a plug-in's module
    (model.name / data.name of the form 'package.module:factory'), or ''."""
    files = {}
    for section in ("model", "data"):
        spec = str(config.get(section, {}).get("name", ""))
        module = sys.modules.get(spec.partition(":")[0]) if ":" in spec else None
        if module is not None and getattr(module, "__file__", None):
            files[os.path.realpath(module.__file__)] = spec
    if not files:
        return ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        spec = files.get(os.path.realpath(frame.filename))
        if spec:
            return f"{spec}, {os.path.basename(frame.filename)} line {frame.lineno}"
    return ""


def one_line(exc: BaseException, limit: int = 300) -> str:
    """`TypeName: first non-empty line of the message`, cut to `limit` characters."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def traceback_tail(exc: BaseException, lines: int = 15) -> str:
    """The last `lines` lines of the formatted traceback (the full one goes to stderr.log)."""
    text = "".join(traceback.format_exception(exc)).rstrip("\n")
    return "\n".join(text.splitlines()[-lines:])


def hint_for(exc: BaseException, config: Config) -> str:
    """The rule-based hint for `exc` (what `explain` gives when the error carries no hint of its own)."""
    return _hint(exc, config)


def _hint(exc: BaseException, config: Config) -> str:
    for matches, hint in _RULES:
        if matches(exc):
            return hint(config)
    return ""


def _get(config: Config, section: str, key: str) -> Any:
    return config.get(section, {}).get(key, "?")


def _has(*markers: str) -> Callable[[BaseException], bool]:
    return lambda e: any(m in str(e) for m in markers)


def _is(*names: str) -> Callable[[BaseException], bool]:
    # By class name too, so torch's classes match without importing torch here.
    return lambda e: any(c.__name__ in names for c in type(e).__mro__)


def _oom_hint(c: Config) -> str:
    return (f"reduce train.batch_size (now {_get(c, 'train', 'batch_size')}), set train.oom = 'recover', "
            "use train.precision = 'bf16', or pick a smaller model or data.image_size")


def _shape_hint(c: Config) -> str:
    return (f"check model.num_classes (now {_get(c, 'model', 'num_classes')}), data.image_size "
            f"(now {_get(c, 'data', 'image_size')}) and data.channels (now {_get(c, 'data', 'channels')}) "
            "against what the model expects (torchvision models want 3 channels and large enough images)")


def _nan_hint(c: Config) -> str:
    return (f"lower train.lr (now {_get(c, 'train', 'lr')}); with fp16 try bf16; "
            "check the data for NaN or infinite values")


def _worker_hint(c: Config) -> str:
    return ("a DataLoader worker process died (killed for memory, or crashed in the dataset's code): "
            f"rerun with data.num_workers = 0 (now {_get(c, 'data', 'num_workers')}) "
            "to see the dataset's own error")


def _cudnn_hint(c: Config) -> str:
    return ("cuDNN could not start: usually the GPU was already full when cuDNN initialised (another "
            "process?) or torch's CUDA build does not match the driver; free the GPU, lower "
            f"train.batch_size (now {_get(c, 'train', 'batch_size')}), "
            "or check nvidia-smi and torch.version.cuda")


def _label_hint(c: Config) -> str:
    return (f"a label is outside [0, num_classes): check model.num_classes (now "
            f"{_get(c, 'model', 'num_classes')}) against the dataset; "
            "on CUDA rerun with CUDA_LAUNCH_BLOCKING=1")


_RULES: list[tuple[Callable[[BaseException], bool], Callable[[Config], str]]] = [
    (_is("NonFiniteLossError"), _nan_hint),
    (_is("CheckpointError"), lambda c: "point model.weights / train.resume_from at a file you trust"),
    (_is("DataFilesMissing"), lambda c: f"put the dataset under data.root (now {_get(c, 'data', 'root')!r})"),
    (_has("model_parallel cannot split"), lambda c: "model_parallel cuts a forward() that is a chain of "
     "layers: have the model factory return an nn.Sequential, or pick strategy.name = 'ddp'"),
    (_is("StrategyUnavailable"), lambda c: "pick strategy.name = 'single' or strategy.accelerator = 'cpu'"),
    (_is("ConfigError"), lambda c: "fix that key in config.toml (or pass --set section.key=value)"),
    (_has("CUDNN_STATUS_NOT_INIT"), _cudnn_hint),
    (_has("DataLoader worker", "exited unexpectedly"), _worker_hint),
    (_is("OutOfMemoryError", "MemoryError"), _oom_hint),
    (_has(*OOM_MARKERS), _oom_hint),
    (_has(*SHAPE_MARKERS), _shape_hint),
    (_has(*LABEL_MARKERS), _label_hint),
    (_has("stack expects each tensor to be equal size"),
     lambda c: "images differ in size: set data.image_size so every image is resized to N x N"),
    (_is("ModuleNotFoundError"), lambda c: "make the plug-in's package importable (PYTHONPATH or pip)"),
    (_is("FileNotFoundError"),
     lambda c: f"check the paths in the config (data.root: {_get(c, 'data', 'root')!r})"),
]
