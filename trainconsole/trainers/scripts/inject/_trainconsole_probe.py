"""The probe inside a script run's processes: what the script does, measured where it happens (stdlib only;
torch is handed in by `sitecustomize` once the script imported it).

Per process (a forked worker starts its own count): the optimizer steps (torch's global step post-hook;
with several optimizers, the most steps any one made), the loss (the scalar each backward ran on, unscaled
where a GradScaler scaled it, summed where it lives: no host-device sync per step on a GPU), each param
group's lr, the training DataLoader's epoch and batches per epoch, the samples of each batch (its
DataLoader's batch size, or else its first dimension), memory (CUDA allocated/peak per device, the RSS) and
the phase (evaluating once a module is put in eval mode or grad is off, until the next step). It reports on
a channel of its own, one JSON object a line in `<channel>/<pid>.jsonl` (never the script's stdout):
`hello` once, `step` at most every SEND_S, `line` for each line the script prints (its head, with the step,
epoch and phase it was printed at, written before the line itself), `nonfinite` at the first NaN/inf loss,
`exit` with an uncaught exception. Nothing here changes what the script computes: the hooks only read.
What runs every step (the step hook, the backward and batch wrappers) is kept to a few attribute reads.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import sys
from time import monotonic
from typing import Any

SEND_S = 0.1
HEAD = 80
#: A line still open (a progress bar redrawn with `\r`) keeps at most this much of its text.
OPEN_LINE = 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


class Channel:
    """This process's file in the channel folder, opened on first use (a forked child opens its own)."""

    def __init__(self, folder: str) -> None:
        self.folder, self.fd = folder, -1

    def send(self, record: dict[str, Any]) -> None:
        """Append one record in a single write (whole lines, whatever the runner reads meanwhile)."""
        if self.fd < 0:
            path = os.path.join(self.folder, f"{os.getpid()}.jsonl")
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        try:
            os.write(self.fd, data)
        except OSError:
            pass  # the run's folder is gone: the script goes on


class State:
    """What one process did so far (slots: the hooks read it every step)."""

    __slots__ = ("pid", "channel", "step", "first", "first_n", "counts", "lr", "loss_sum", "loss_n",
                 "nonfinite", "scaled", "epoch", "epoch_start", "batches", "train_loader", "loader",
                 "credited", "samples", "batch_samples", "read_batches", "eval_at", "open", "due", "ended")

    def __init__(self, folder: str) -> None:
        self.pid = os.getpid()
        self.channel = Channel(folder)
        self.step = 0
        self.first: Any = None  # the first optimizer that stepped (its param groups' lr), and its steps
        self.first_n = 0
        self.counts: dict[int, int] = {}  # the steps of any other optimizer
        self.lr: Any = None  # the first param group's lr at the first optimizer's last step (the others'
        # are read when a record is sent)
        self.loss_sum: Any = 0.0  # since the last `step` record (a tensor where the loss lives on a GPU)
        self.loss_n = 0
        self.nonfinite = False
        self.scaled: tuple[int, Any] | None = None  # (id of GradScaler.scale's output, its scale)
        self.epoch, self.epoch_start, self.batches = 0, 0, None
        self.train_loader: int | None = None
        self.loader: tuple[int, int | None] | None = None  # the DataLoader iterated last, its length
        self.credited = True  # the current iteration of it was counted as an epoch
        self.samples = 0  # since the last `step` record
        self.batch_samples = 0  # of the batch taken last (or the loader's batch size)
        self.read_batches = True  # the loader being iterated has no batch size: each batch's is read
        self.eval_at = -1  # the step at which a module last went into eval mode (evaluating until the next)
        self.open = {"o": "", "e": ""}  # per stream, the line written so far
        self.due = 0.0
        self.ended = False


class Probe:
    """The hooks of one process, and its state (renewed in a forked child)."""

    __slots__ = ("torch", "folder", "state", "rank")

    def __init__(self, torch: Any, folder: str) -> None:
        self.torch, self.folder = torch, folder
        self.state = State(folder)
        self.rank = os.environ.get("RANK")

    def current(self) -> State:
        """This process's state (a forked child's own: `forked` renews it)."""
        return self.state

    def forked(self) -> None:
        """In a forked child (a DataLoader worker, an mp worker): its own count and channel file."""
        self.state = State(self.folder)
        self.hello(self.state)

    def hello(self, st: State) -> None:
        """Say who this process is."""
        st.channel.send({"k": "hello", "ppid": os.getppid(), "rank": self.rank,
                         "local_rank": os.environ.get("LOCAL_RANK"), "argv": sys.argv[:8]})

    def on_step(self, optimizer: Any, args: Any = None, kwargs: Any = None) -> None:
        """torch's optimizer step post-hook: count the step (one per iteration, whatever the optimizers).
        It runs every step: `_quiet` inlined, the rest of the work left to `send_step`."""
        try:
            st = self.state
            if optimizer is st.first:
                n = st.first_n = st.first_n + 1
                st.lr = optimizer.param_groups[0].get("lr")  # this step's (a scheduler may change it)
            else:
                n = self.other_step(st, optimizer)
            if n > st.step:
                st.step = n
                if not st.credited:
                    self.new_epoch(st)
                st.samples += st.batch_samples
                if monotonic() >= st.due:
                    self.send_step(st)
        except Exception:  # noqa: BLE001, S110 - measuring is best effort, the script is not
            pass

    def other_step(self, st: State, optimizer: Any) -> int:
        """A step of an optimizer other than the first (or of the first, the first time): its count."""
        if st.first is None:
            st.first, st.first_n, st.lr = optimizer, 1, optimizer.param_groups[0].get("lr")
            return 1
        n = st.counts[id(optimizer)] = st.counts.get(id(optimizer), 0) + 1
        return n

    def new_epoch(self, st: State) -> None:
        """The DataLoader being iterated made a step: an epoch of the training loader begins."""
        st.credited = True
        loader, length = st.loader or (None, None)
        if st.train_loader is None:
            st.train_loader = loader
        if loader == st.train_loader:
            st.epoch, st.epoch_start, st.batches = st.epoch + 1, st.step - 1, length

    def on_loss(self, tensor: Any) -> None:
        """A backward on a scalar: its value (unscaled) added where it lives; a NaN/inf sent at once."""
        st = self.current()
        scaled = st.scaled
        if scaled is not None and scaled[0] == id(tensor):
            tensor, st.scaled = tensor.detach() / scaled[1], None
        if tensor.is_cpu:  # reading a CPU tensor is no sync
            value = tensor.item()
            st.loss_sum += value
            if not math.isfinite(value) and not st.nonfinite:
                self.send_nonfinite(st, value)
        else:
            st.loss_sum = tensor.detach().float() + st.loss_sum
        st.loss_n += 1

    def send_nonfinite(self, st: State, value: float, step: int | None = None) -> None:
        """The first non-finite loss, at the step it happened (the step being made)."""
        st.nonfinite = True
        st.channel.send({"k": "nonfinite", "step": st.step + 1 if step is None else step, "loss": str(value),
                         "epoch": st.epoch or None})

    def send_step(self, st: State, final: bool = False) -> None:
        """Where training is: step, epoch, loss (the mean since the last record), lr, samples, memory.
        The first param group's lr is the one the last step used; the other groups' are read now (in the
        final record, after a scheduler's last change)."""
        st.due = monotonic() + SEND_S
        record: dict[str, Any] = {"k": "step", "step": st.step, "epoch": st.epoch or None,
                                  "batch": st.step - st.epoch_start, "batches": st.batches,
                                  "samples": st.samples, "mem": self.memory()}
        if st.loss_n:
            loss = float(st.loss_sum) / st.loss_n if isinstance(st.loss_sum, float) \
                else st.loss_sum.item() / st.loss_n  # the one sync, a few times a second
            record["loss"], record["losses"] = loss, st.loss_n
            if not math.isfinite(loss) and not st.nonfinite:
                self.send_nonfinite(st, loss, st.step)
        if st.first is not None:
            lrs = [st.lr, *(g.get("lr") for g in st.first.param_groups[1:])]
            record["lr"] = [lr for lr in lrs if _number(lr)]
        if final:
            record["final"] = True
        st.loss_sum, st.loss_n, st.samples = 0.0, 0, 0
        st.channel.send(record)

    def memory(self) -> dict[str, Any]:
        """`{"devices": [...], "rss": bytes}`: torch's own figures for each initialised CUDA device."""
        cuda, devices = self.torch.cuda, []
        if cuda.is_initialized():
            for i in range(cuda.device_count()):
                devices.append({"device": f"cuda:{i}", "allocated": cuda.memory_allocated(i),
                                "reserved": cuda.memory_reserved(i), "peak": cuda.max_memory_allocated(i)})
        return {"devices": devices, "rss": _rss()}

    def on_loader(self, loader: Any) -> None:
        """A DataLoader's iteration begins: it is the training loader's epoch once a step happens in it."""
        st = self.current()
        try:
            length = len(loader)
        except TypeError:  # an IterableDataset without a length
            length = None
        st.loader, st.credited = (id(loader), length), False
        size = getattr(loader, "batch_size", None)  # a DataLoader's batches are of it (but its last one)
        st.read_batches = not (type(size) is int and size > 0)
        if not st.read_batches:
            st.batch_samples = size

    def on_batch(self, batch: Any) -> None:
        """A batch taken from a DataLoader: its samples (the first dimension of its first tensor)."""
        st = self.state
        while isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        if isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        shape = getattr(batch, "shape", None)
        st.batch_samples = int(shape[0]) if shape else st.batch_samples

    def on_mode(self, training: bool) -> None:
        """`module.train(mode)` / `module.eval()`."""
        if not training:
            st = self.current()
            st.eval_at = st.step

    def on_text(self, stream: str, text: str) -> None:
        """The script wrote TEXT: a stamp for each line it completes (sent before the text is written)."""
        st = self.current()
        if "\n" not in text:
            st.open[stream] = (st.open[stream] + text)[-OPEN_LINE:]
            return
        *done, rest = (st.open[stream] + text).split("\n")
        st.open[stream] = rest[-OPEN_LINE:]
        phase = "eval" if (st.eval_at == st.step or not self.torch.is_grad_enabled()) else "train"
        for line in done:
            st.channel.send({"k": "line", "s": stream, "h": _head(line), "step": st.step,
                             "epoch": st.epoch or None, "ph": phase})

    def on_exit(self, error: BaseException | None = None) -> None:
        """The process ends: the last figures, and the exception that ends it (an OOM's step and memory)."""
        st = self.current()
        if (st.step or st.loss_n) and not st.ended:
            self.send_step(st, final=True)
        st.ended = True
        if error is not None:
            st.channel.send({"k": "exit", "error": f"{type(error).__name__}: {str(error)[:300]}",
                             "step": st.step, "mem": self.memory()})


def _head(line: str) -> str:
    """What the runner sees of a line: its last state (after the last `\r`), first HEAD characters."""
    states = [s for s in line.split("\r") if s]
    return states[-1][:HEAD] if states else ""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def install(torch: Any, folder: str) -> Probe:
    """Put the probe's hooks in place; returns it."""
    probe = Probe(torch, folder)
    probe.hello(probe.state)
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(probe.on_step)
    _wrap_backward(probe, torch)
    _wrap_scaler(probe, torch)
    _wrap_loaders(probe, torch)
    _wrap_mode(probe, torch)
    for key, stream in (("o", sys.stdout), ("e", sys.stderr)):
        _wrap_stream(probe, key, stream)
    _wrap_excepthook(probe)
    atexit.register(probe.on_exit)
    os.register_at_fork(after_in_child=lambda: _quiet(probe.forked))
    return probe


def _quiet(hook: Any, *args: Any) -> None:
    """Call a probe hook; an error of ours never reaches the script."""
    try:
        hook(*args)
    except Exception:  # noqa: BLE001, S110 - measuring is best effort, the script is not
        pass


def _wrap_backward(probe: Probe, torch: Any) -> None:
    backward = torch.Tensor.backward

    isfinite = math.isfinite

    def probed_backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:  # _quiet inlined, and Probe.on_loss's common case (a CPU loss, not scaled): every step
            if not (args or kwargs) or self.numel() == 1:  # no gradient given: a scalar (or torch raises)
                st = probe.state
                if st.scaled is None and self.is_cpu:
                    value = self.item()
                    st.loss_sum += value
                    st.loss_n += 1
                    if not isfinite(value) and not st.nonfinite:
                        probe.send_nonfinite(st, value)
                else:
                    probe.on_loss(self)
        except Exception:  # noqa: BLE001, S110 - measuring is best effort, the script is not
            pass
        return backward(self, *args, **kwargs)

    probed_backward.__wrapped__ = backward  # type: ignore[attr-defined]
    probed_backward.__doc__ = backward.__doc__
    torch.Tensor.backward = probed_backward


def _wrap_scaler(probe: Probe, torch: Any) -> None:
    scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if scaler is None:
        return
    scale = scaler.scale

    def probed_scale(self: Any, outputs: Any) -> Any:
        scaled = scale(self, outputs)
        factor = getattr(self, "_scale", None)
        if scaled is not outputs and factor is not None and getattr(scaled, "numel", lambda: 0)() == 1:
            probe.current().scaled = (id(scaled), factor)
        return scaled

    scaler.scale = probed_scale


def _wrap_loaders(probe: Probe, torch: Any) -> None:
    from torch.utils.data import dataloader as data

    loader_iter, batch_next = data.DataLoader.__iter__, data._BaseDataLoaderIter.__next__

    def probed_iter(self: Any) -> Any:
        it = loader_iter(self)
        _quiet(probe.on_loader, self)
        return it

    def probed_next(self: Any) -> Any:
        batch = batch_next(self)
        if probe.state.read_batches:  # a loader without a batch size (a batch sampler's): every batch
            _quiet(probe.on_batch, batch)
        return batch

    data.DataLoader.__iter__ = probed_iter
    data._BaseDataLoaderIter.__next__ = probed_next


def _wrap_mode(probe: Probe, torch: Any) -> None:
    train = torch.nn.Module.train

    def probed_train(self: Any, mode: bool = True) -> Any:
        _quiet(probe.on_mode, bool(mode))
        return train(self, mode)

    probed_train.__doc__ = train.__doc__
    torch.nn.Module.train = probed_train


def _wrap_stream(probe: Probe, key: str, stream: Any) -> None:
    """Note each line written to STREAM (its own object keeps its type: only `write` is wrapped)."""
    write = getattr(stream, "write", None)
    if write is None:
        return

    def probed_write(text: Any) -> Any:
        if isinstance(text, str):
            _quiet(probe.on_text, key, text)
        return write(text)

    try:
        stream.write = probed_write
    except (AttributeError, TypeError):
        pass  # a stream that takes no attribute: its lines are read as text


def _wrap_excepthook(probe: Probe) -> None:
    hook = sys.excepthook

    def probed_hook(kind: Any, error: Any, tb: Any) -> None:
        _quiet(probe.on_exit, error)
        hook(kind, error, tb)

    sys.excepthook = probed_hook
