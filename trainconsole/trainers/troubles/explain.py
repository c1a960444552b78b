"""Every cause -> hint rule of the project, in one table: the loop, the tune trials and the script runner
all read it (a script's traceback is matched on its text, with the wording for a script).

Stdlib only, so that a run can still explain a failure that happened while importing torch. Pointed
explanations that need the model and batch (which layer, which label) are in troubles/pointed.py.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainconsole.protocol import Config

from . import disk

#: How long a cause may be, everywhere (the `failed` event's one line).
CAUSE_LIMIT = 300


@dataclass(frozen=True)
class Explanation:
    """What the `failed` event says: the cause on one line, a hint ('' when there is no good guess)."""

    cause: str
    hint: str


SHAPE_MARKERS = (
    "mat1 and mat2 shapes cannot be multiplied", "size mismatch", "Expected input batch_size",
    "to have 3 channels", "to have 1 channels", "channels, but got", "Calculated padded input size",
    "Output size is too small", "Kernel size can't be greater", "shape mismatch",
    "(unbatched) or", "D input (got",  # a sample of the wrong rank: conv, pooling, BatchNorm
)
OOM_MARKERS = ("out of memory", "can't allocate memory", "DefaultCPUAllocator")
LABEL_MARKERS = ("device-side assert", "out of bounds", "Target -1", "index out of range in self")


def explain(exc: BaseException, config: Config | None = None) -> Explanation:
    """The cause (`Type: first line of the message`) and a hint for an exception raised by a run."""
    if disk.is_disk_full(exc) and not getattr(exc, "hint", ""):  # torch hides ENOSPC ("unexpected pos")
        where = os.environ.get("TRAINCONSOLE_HOME") or os.getcwd()
        return Explanation(cause=disk.cause(exc, where, one_line(exc)), hint=disk.DISK_FULL_HINT)
    own = getattr(exc, "hint", "")  # an error that knows its own fix (TrainerError subclasses)
    hint = own if isinstance(own, str) and own else hint_for(exc, config or {})
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


def one_line(exc: BaseException, limit: int = CAUSE_LIMIT) -> str:
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
    return next((rule.run(config) for rule in RULES if rule.run and rule.matches(exc)), "")


def script_hint(cause: str) -> str:
    """The hint for a script's traceback, from its cause line `Type: message` ('' when no rule fits)."""
    return next((rule.script for rule in RULES if rule.script and rule.matches_line(cause)), "")


@dataclass(frozen=True)
class Rule:
    """One explanation: what it recognises (exception class names, or words in the message) and its hint
    for a run (from the run's config) and for a script (whose config it does not know)."""

    names: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()
    run: Callable[[Config], str] | None = None
    script: str = ""
    script_markers: tuple[str, ...] = ()  # words only a script's cause line shows

    def matches(self, exc: BaseException) -> bool:
        """By class name too, so torch's classes match without importing torch here."""
        return any(c.__name__ in self.names for c in type(exc).__mro__) or _any_in(self.markers, str(exc))

    def matches_line(self, cause: str) -> bool:
        """The same, for a cause line read from a script's stderr."""
        kind = cause.split(":", 1)[0].rsplit(".", 1)[-1].strip()
        return kind in self.names or _any_in(self.markers + self.script_markers, cause)


def _any_in(markers: tuple[str, ...], text: str) -> bool:
    return any(m in text for m in markers)


def _get(config: Config, section: str, key: str) -> Any:
    return config.get(section, {}).get(key, "?")


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


#: The table: the first rule that matches gives the hint.
RULES = (
    Rule(("NonFiniteLossError",), run=_nan_hint, script_markers=("NaN", "non-finite", "loss is nan",
                                                                  "loss is inf"),
         script="the loss became NaN or infinite: lower the learning rate, try bf16 instead of fp16, "
                "check the data"),
    Rule(markers=disk.MARKERS, script=disk.DISK_FULL_HINT, run=lambda c: disk.DISK_FULL_HINT),
    Rule(("CheckpointError",), run=lambda c: "point model.weights / train.resume_from at a file you trust"),
    Rule(("DataFilesMissing",),
         run=lambda c: f"put the dataset under data.root (now {_get(c, 'data', 'root')!r})"),
    Rule(markers=("model_parallel cannot split",), run=lambda c: "model_parallel cuts a forward() that is a "
         "chain of layers: have the model factory return an nn.Sequential, or pick strategy.name = 'ddp'"),
    Rule(("StrategyUnavailable",),
         run=lambda c: "pick strategy.name = 'single' or strategy.accelerator = 'cpu'"),
    Rule(("ConfigError",), run=lambda c: "fix that key in config.toml (or pass --set section.key=value)"),
    Rule(markers=("CUDNN_STATUS_NOT_INIT",), run=_cudnn_hint),
    Rule(markers=("DataLoader worker", "exited unexpectedly"), run=_worker_hint),
    Rule(("OutOfMemoryError", "MemoryError"), OOM_MARKERS, _oom_hint,
         "out of memory: lower the batch size, use bf16/fp16 autocast, or a smaller model or image size"),
    Rule(markers=SHAPE_MARKERS, run=_shape_hint, script="a shape mismatch: check the number of classes, "
         "image size and channels against what the model expects"),
    Rule(markers=LABEL_MARKERS, run=_label_hint, script="a label is outside [0, num_classes): check the "
         "model's number of classes against the dataset; on CUDA rerun with CUDA_LAUNCH_BLOCKING=1"),
    Rule(markers=("stack expects each tensor to be equal size",),
         run=lambda c: "images differ in size: set data.image_size so every image is resized to N x N"),
    Rule(("ModuleNotFoundError",), run=lambda c: "make the plug-in's package importable (PYTHONPATH or pip)",
         script="make the module importable (pip install it, or fix PYTHONPATH)"),
    Rule(("FileNotFoundError",), run=lambda c: f"check the paths in the config (data.root: "
         f"{_get(c, 'data', 'root')!r})",
         script="check the script's paths: it runs in the directory `run` was called from"),
    Rule(script_markers=("SIGKILL",), script="killed from outside: often the kernel's out-of-memory killer "
         "(see dmesg)"),
)
