"""The probe inside a script run's processes: what the script does, measured where it happens (stdlib only;
torch is handed in by `sitecustomize` once the script imported it).

Per process (a forked worker starts its own count): the optimizer steps (torch's global step post-hook; the
run's step is the training iteration: with several optimizers, the most steps any one made), each
optimizer's loss (the backward calls since the previous optimizer step fed the one that steps next: their
sum is the step's loss, the script's own under gradient accumulation; unscaled where a GradScaler scaled
it; summed where it lives, no host-device sync per step on a GPU), named after the script's variables
where several optimizers step in turn (a GAN's `loss_D`, `loss_G`), each param group's lr (the headline:
the largest group's), the training DataLoader's epoch and batches per epoch, the samples of each batch
(its DataLoader's batch size, or else its first dimension), memory (CUDA allocated/peak per device, the
RSS) and the phase (evaluating once a module is put in eval mode or grad is off, until the next step).
Without any optimizer (a hand-written `w -= lr * w.grad`), a step is a backward call followed by an
in-place update. It reports on a channel of its own, one JSON object a line in `<channel>/<pid>.jsonl`
(never the script's stdout), its keys those of `R`: `hello` once, `step` at most every SEND_S, `line` for
each line the script prints (its head, with the step, epoch and phase it was printed at, written before
the line itself), `nonfinite` at the first NaN/inf loss, `exit` with an uncaught exception. Nothing here
changes what the script computes: the hooks only read.
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
#: The first steps of a process, during which each backward's variable name is looked up (the names of
#: several optimizers' losses: every optimizer of a GAN steps in the first iteration).
NAMING_STEPS = 3
#: Words of an optimizer's variable name that say only that it is one (`optimizerD` -> `D`).
OPTIMIZER_WORDS = ("optimizer", "optimiser", "optim", "opt")


class R:
    """The channel's record kinds and keys: the probe writes them, the runner (`measured.py`,
    `probe_events.py`) reads them, and `report()` writes `REPORTS`. One table for both sides."""

    KIND = "k"
    HELLO, STEP, LINE, NONFINITE, EXIT, REPORTS = "hello", "step", "line", "nonfinite", "exit", "reports"
    STEPPED = "stepped"  # the process made its first optimizer step (the run's main process: the first)
    # hello
    PPID, RANK, LOCAL_RANK, ARGV = "ppid", "rank", "local_rank", "argv"
    # step (AT: the step; LOSS: the mean step loss of one optimizer, LOSSES: how many steps it averages;
    # NAMED: {name: mean step loss} where several optimizers step in turn; LR: the largest param group's,
    # LRS: every group's of the first optimizer, in order)
    AT, EPOCH, BATCH, BATCHES, SAMPLES, MEM = "step", "epoch", "batch", "batches", "samples", "mem"
    LOSS, LOSSES, NAMED, LR, LRS, FINAL, BY_HAND = "loss", "losses", "named", "lr", "lrs", "final", "by_hand"
    # (TRAINED: the samples since the first step, SECONDS: since it ended; LAST: the last step's own loss,
    # by name as in NAMED, in the final record)
    TRAINED, SECONDS, LAST = "trained", "seconds", "last"
    # (SEGMENT: which model of the run, once a second one began: a study's trials, k-fold's folds)
    SEGMENT = "segment"
    # line (EVALUATED: a DataLoader other than the training one was iterated since the last step)
    STREAM, TEXT_HEAD, PHASE, EVALUATED = "s", "h", "ph", "ev"
    # exit, reports
    ERROR, NAMES = "error", "names"


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


class Stepper:
    """One optimizer of the process: its steps, and the losses of the steps since the last record."""

    __slots__ = ("optimizer", "steps", "offset", "loss_sum", "loss_n", "last", "largest", "groups", "names",
                 "var", "in_turn")

    def __init__(self, optimizer: Any, names: list[str]) -> None:
        self.optimizer, self.steps = optimizer, 0
        self.offset = 0  # the run's step when its segment began (its steps go on from there)
        self.loss_sum: Any = 0.0  # the step losses since the last record (a tensor where they live on a GPU)
        self.loss_n = 0
        self.last: Any = None  # its last step's own loss
        self.groups = len(optimizer.param_groups)
        self.largest = _largest_group(optimizer.param_groups)
        self.names = names  # the variables its first step's backward calls ran on
        self.var = _variable_of(optimizer, sys._getframe(1))  # the script's name for the optimizer
        self.in_turn = False  # it steps in turn with others (a GAN's)

    def lr(self) -> Any:
        """The lr of its largest param group (a group added since is taken into account)."""
        groups = self.optimizer.param_groups
        if len(groups) != self.groups:
            self.groups, self.largest = len(groups), _largest_group(groups)
        return groups[self.largest].get("lr")

    def mean_loss(self) -> float:
        """The mean of its step losses since the last record (the one sync, a few times a second), reset."""
        total = self.loss_sum if isinstance(self.loss_sum, float) else self.loss_sum.item()
        mean = float(total) / self.loss_n
        self.loss_sum, self.loss_n = 0.0, 0
        return mean


class ProcessFacts:
    """What one process did so far (slots: the hooks read it every step)."""

    __slots__ = ("pid", "channel", "step", "first", "last", "steppers", "several", "lr", "pending",
                 "pending_n", "naming", "names", "by_hand", "first_begun", "segment", "nonfinite", "scaled",
                 "epoch", "epoch_start", "batches", "last_batch", "train_loader", "loader", "credited",
                 "samples", "batch_samples", "trained", "began", "read_batches", "eval_at", "evaluated_at",
                 "open", "due", "ended")

    def __init__(self, folder: str) -> None:
        self.pid = os.getpid()
        self.channel = Channel(folder)
        self.step = 0
        self.first: Stepper | None = None  # the first optimizer that stepped: the headline lr is its
        self.last: Stepper | None = None  # the optimizer that stepped last
        self.steppers: dict[int, Stepper] = {}
        self.several = False  # several optimizers step in turn (each one's loss is its own series)
        self.lr: Any = None  # the first optimizer's largest group's lr at its last step
        self.pending: Any = 0.0  # the losses of the backward calls since the last optimizer step
        self.pending_n = 0
        self.naming = True  # each backward's variable name is looked up (the first NAMING_STEPS steps)
        self.names: list[str] = []
        self.by_hand = False  # no optimizer: a backward followed by an in-place update is a step
        self.first_begun = False  # an optimizer began a step (in this process or its parent)
        self.segment = 1  # which model of the run is training (a new optimizer after the last stopped)
        self.nonfinite = False
        self.scaled: tuple[int, Any] | None = None  # (id of GradScaler.scale's output, its scale)
        self.epoch, self.epoch_start, self.batches = 0, 0, None
        self.last_batch = 0  # the samples of the training loader's smaller last batch (0: a whole one)
        self.train_loader: int | None = None
        self.loader: tuple[int, int | None, int] | None = None  # the DataLoader iterated last, its length,
        # its last batch's samples
        self.credited = True  # the current iteration of it was counted as an epoch
        self.samples = 0  # since the last `step` record
        self.trained, self.began = 0, 0.0  # the samples since the first step, and when it ended
        self.batch_samples = 0  # of the batch taken last (or the loader's batch size)
        self.read_batches = True  # the loader being iterated has no batch size: each batch's is read
        self.eval_at = -1  # the step at which a module last went into eval mode (evaluating until the next)
        self.evaluated_at = -1  # the step after which a loader other than the training one was iterated
        self.open = {"o": "", "e": ""}  # per stream, the line written so far
        self.due = 0.0
        self.ended = False


class Probe:
    """The hooks of one process, and its state (renewed in a forked child)."""

    __slots__ = ("torch", "folder", "state", "rank")

    def __init__(self, torch: Any, folder: str) -> None:
        self.torch, self.folder = torch, folder
        self.state = ProcessFacts(folder)
        self.rank = os.environ.get("RANK")

    def current(self) -> ProcessFacts:
        """This process's state (a forked child's own: `forked` renews it)."""
        return self.state

    def forked(self) -> None:
        """In a forked child (a DataLoader worker, an mp worker): its own count and channel file (the
        hooks it inherits: whether in-place updates are watched, whether an optimizer stepped)."""
        parent, self.state = self.state, ProcessFacts(self.folder)
        self.state.by_hand, self.state.first_begun = parent.by_hand, parent.first_begun
        self.hello(self.state)

    def hello(self, st: ProcessFacts) -> None:
        """Say who this process is."""
        st.channel.send({R.KIND: R.HELLO, R.PPID: os.getppid(), R.RANK: self.rank,
                         R.LOCAL_RANK: os.environ.get("LOCAL_RANK"), R.ARGV: sys.argv[:8]})

    def on_step(self, optimizer: Any, args: Any = None, kwargs: Any = None) -> None:
        """torch's optimizer step post-hook: the step's loss is this optimizer's; the run's step moves on
        when this optimizer made more steps than any did (one per iteration, whatever the optimizers)."""
        try:
            st = self.state
            last = st.last
            opt = last if last is not None and last.optimizer is optimizer else self.stepper(st, optimizer)
            opt.steps += 1
            if st.pending_n:
                opt.loss_sum, opt.loss_n, opt.last = st.pending + opt.loss_sum, opt.loss_n + 1, st.pending
                st.pending, st.pending_n = 0.0, 0
            if st.naming:
                st.names = []
            if opt is st.first:  # this step's lr (a scheduler may change it; a group added: see `lr`)
                st.lr = optimizer.param_groups[opt.largest].get("lr")
            self.count(st, opt.offset + opt.steps)
        except Exception:  # noqa: BLE001, S110 - measuring is best effort, the script is not
            pass

    def count(self, st: ProcessFacts, n: int) -> None:
        """A step that made N steps of its optimizer: the run's step where no optimizer made as many. A
        record is sent once the iteration is whole (each optimizer stepping in turn made its step), from
        the second step on (by then, whether several optimizers step in turn is known)."""
        if n > st.step:
            st.step = n
            if not st.credited:
                self.new_epoch(st)
            batch = st.last_batch if st.last_batch and n - st.epoch_start == st.batches else st.batch_samples
            st.samples += batch
            if n > 1:  # the run's speed: the samples after the first step over the time since it ended
                st.trained += batch
            else:  # (its record comes from the second step on: the first says only that it stepped)
                st.began = monotonic()
                st.channel.send({R.KIND: R.STEPPED, R.AT: n})
            if st.naming:
                st.naming = n < NAMING_STEPS
        elif not st.several or n < st.step:
            return
        if n > 1 and monotonic() >= st.due and (not st.several or self.iteration_done(st)):
            self.send_step(st)

    @staticmethod
    def iteration_done(st: ProcessFacts) -> bool:
        """Whether every optimizer stepping in turn made the run's step."""
        return all(opt.steps >= st.step for opt in st.steppers.values() if opt.in_turn)

    def stepper(self, st: ProcessFacts, optimizer: Any) -> Stepper:
        """The optimizer stepping now, when another stepped last (or none): it steps in turn with others
        once it stepped before (a GAN's second iteration), not when it is new (a model trained after)."""
        opt = st.steppers.get(id(optimizer))
        if opt is None:
            opt = st.steppers[id(optimizer)] = Stepper(optimizer, st.names)
            st.first = st.first or opt
            if st.last is not None and not st.several and st.last.steps > 1:
                self.new_segment(st, opt)
        elif st.last is not None:
            st.several = opt.in_turn = st.last.in_turn = True
            if st.last.offset and st.last.steps == 1:  # in turn after all (a WGAN's critic first): no segment
                st.segment, st.last.offset, st.first = st.segment - 1, 0, opt
        st.last = opt
        return opt

    def new_segment(self, st: ProcessFacts, opt: Stepper) -> None:
        """A new optimizer after the last one stepped alone: a new model (a study's trial, a fold, a
        retrain). The last one's figures are sent; the new one's steps and epochs go on from the run's."""
        if any(other.loss_n for other in st.steppers.values()):
            self.send_step(st)
        st.segment, opt.offset, st.first, st.epoch = st.segment + 1, st.step, opt, 0

    def new_epoch(self, st: ProcessFacts) -> None:
        """The DataLoader being iterated made a step: an epoch of the training loader begins."""
        st.credited = True
        loader, length, last = st.loader or (None, None, 0)
        if st.train_loader is None:
            st.train_loader = loader
        if loader == st.train_loader:
            st.epoch, st.epoch_start, st.batches, st.last_batch = st.epoch + 1, st.step - 1, length, last

    def on_backward(self, tensor: Any, *args: Any, **kwargs: Any) -> None:
        """`tensor.backward(...)` on a scalar (no gradient given, or torch raises; or one element): its
        value (unscaled) added where it lives, until an optimizer steps; a NaN/inf sent at once."""
        if (args or kwargs) and tensor.numel() != 1:
            return
        st = self.state
        scaled = st.scaled
        if scaled is not None and scaled[0] == id(tensor):
            tensor, st.scaled = tensor.detach() / scaled[1], None
        if tensor.is_cpu:  # reading a CPU tensor is no sync
            value = tensor.item()
            st.pending += value
            if not math.isfinite(value) and not st.nonfinite:
                self.send_nonfinite(st, value)
        else:
            st.pending = tensor.detach().float() + st.pending
        st.pending_n += 1
        if st.naming:
            st.names.append(_variable_of(tensor, sys._getframe(1)))
            if not st.first_begun and not st.by_hand:
                self.by_hand_on(st)

    def by_hand_on(self, st: ProcessFacts) -> None:
        """A backward before any optimizer step: watch in-place updates (a hand-written step)."""
        st.by_hand = True
        _watch_updates(self, self.torch)

    def by_hand_off(self, st: ProcessFacts) -> None:
        """An optimizer stepped: the in-place updates are no steps (torch's own methods back)."""
        st.by_hand = False
        _unwatch_updates(self.torch)

    def on_first_step(self, handle: Any) -> None:
        """An optimizer begins its first step: in-place updates are its own, never a hand-written step."""
        handle.remove()
        self.state.first_begun = True
        if self.state.by_hand:
            self.by_hand_off(self.state)

    def on_update(self, tensor: Any, *args: Any, **kwargs: Any) -> None:
        """An in-place add/sub while no optimizer steps: on a parameter (a leaf that requires grad, never a
        BatchNorm's counter or an activation), after a backward, the hand-written step."""
        st = self.state
        if st.pending_n and not st.first_begun and tensor.is_leaf and tensor.requires_grad:
            opt = st.steppers.get(0) or st.steppers.setdefault(0, Stepper(_NoOptimizer(), st.names))
            opt.steps += 1
            opt.loss_sum, opt.loss_n, opt.last = st.pending + opt.loss_sum, opt.loss_n + 1, st.pending
            st.pending, st.pending_n, st.last = 0.0, 0, opt
            self.count(st, opt.steps)

    def send_nonfinite(self, st: ProcessFacts, value: float, step: int | None = None) -> None:
        """The first non-finite loss, at the step it happened (the step being made)."""
        st.nonfinite = True
        st.channel.send({R.KIND: R.NONFINITE, R.AT: st.step + 1 if step is None else step, R.LOSS: str(value),
                         R.EPOCH: st.epoch or None})

    def send_step(self, st: ProcessFacts, final: bool = False) -> None:
        """Where training is: step, epoch, loss (each optimizer's mean step loss since the last record), lr,
        samples, memory. The largest group's lr is the one the last step used; every group's is read now
        (in the final record, after a scheduler's last change)."""
        st.due = monotonic() + SEND_S
        record: dict[str, Any] = {R.KIND: R.STEP, R.AT: st.step, R.EPOCH: st.epoch or None,
                                  R.BATCH: st.step - st.epoch_start, R.BATCHES: st.batches,
                                  R.SAMPLES: st.samples, R.TRAINED: st.trained,
                                  R.SECONDS: round(monotonic() - st.began, 6), R.MEM: self.memory()}
        record.update(self.losses(st))
        if st.first is not None and _number(st.lr):
            record[R.LR] = st.first.lr() if st.first.groups != len(st.first.optimizer.param_groups) else st.lr
            groups = st.first.optimizer.param_groups
            record[R.LRS] = [lr for lr in (g.get("lr") for g in groups) if _number(lr)]
        if st.by_hand:
            record[R.BY_HAND] = True
        if st.segment > 1:
            record[R.SEGMENT] = st.segment
        if final:
            record[R.FINAL], record[R.LAST] = True, self.last_losses(st)
        st.samples = 0
        st.channel.send(record)

    def losses(self, st: ProcessFacts) -> dict[str, Any]:
        """The record's loss: each optimizer's under its name where several step in turn, else the mean
        step loss of all (one optimizer; several one after another); a non-finite one warned."""
        stepped = [opt for opt in st.steppers.values() if opt.loss_n]
        if not stepped:
            return {}
        if st.several:
            named = {}
            for opt, label in zip(stepped, _labels(list(st.steppers.values()), stepped), strict=True):
                named[label] = self.checked(st, opt.mean_loss())
            return {R.NAMED: named}
        n = sum(opt.loss_n for opt in stepped)
        total = sum([opt.loss_n * opt.mean_loss() for opt in stepped])
        return {R.LOSS: self.checked(st, total / n), R.LOSSES: n}

    def last_losses(self, st: ProcessFacts) -> dict[str, float]:
        """The last step's own loss of each optimizer (by name where several step in turn, else `loss`)."""
        every = list(st.steppers.values())
        if st.several:
            return {label: float(opt.last) for opt, label in zip(every, _labels(every, every), strict=True)
                    if opt.last is not None}
        return {R.LOSS: float(st.last.last)} if st.last is not None and st.last.last is not None else {}

    def checked(self, st: ProcessFacts, loss: float) -> float:
        """LOSS, warned of where it is the first non-finite one (a GPU loss is read only now)."""
        if not math.isfinite(loss) and not st.nonfinite:
            self.send_nonfinite(st, loss, st.step)
        return loss

    def memory(self) -> dict[str, Any]:
        """`{"devices": [...], "rss": bytes}`: torch's own figures for each initialised CUDA device."""
        cuda, devices = self.torch.cuda, []
        if cuda.is_initialized():
            for i in range(cuda.device_count()):
                devices.append({"device": f"cuda:{i}", "allocated": cuda.memory_allocated(i),
                                "reserved": cuda.memory_reserved(i), "peak": cuda.max_memory_allocated(i)})
        return {"devices": devices, "rss": _rss()}

    def on_loader(self, loader: Any, iterator: Any = None) -> None:
        """A DataLoader's iteration begins: it is the training loader's epoch once a step happens in it."""
        st = self.current()
        try:
            length = len(loader)
        except TypeError:  # an IterableDataset without a length
            length = None
        size = getattr(loader, "batch_size", None)  # a DataLoader's batches are of it (but its last one)
        st.read_batches = not (type(size) is int and size > 0)
        st.loader, st.credited = (id(loader), length, 0 if st.read_batches else _last_batch(loader)), False
        if st.train_loader is not None and id(loader) != st.train_loader:  # a validation's, a test's
            st.evaluated_at = st.step
        if not st.read_batches:
            st.batch_samples = size

    def on_batch(self, iterator: Any, batch: Any) -> None:
        """A batch taken from a DataLoader: its samples (the first dimension of its first tensor)."""
        st = self.state
        if not st.read_batches:  # a loader with a batch size: its batches are of it
            return
        while isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        if isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        shape = getattr(batch, "shape", None)
        st.batch_samples = int(shape[0]) if shape else st.batch_samples

    def on_mode(self, module: Any, mode: bool = True) -> None:
        """`module.train(mode)` / `module.eval()` (`mode` by name, as torch's own is called)."""
        if not mode:
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
        evaluated = {R.EVALUATED: True} if st.evaluated_at == st.step else {}
        for line in done:
            st.channel.send({R.KIND: R.LINE, R.STREAM: stream, R.TEXT_HEAD: _head(line), R.AT: st.step,
                             R.EPOCH: st.epoch or None, R.PHASE: phase, **evaluated})

    def on_exit(self, error: BaseException | None = None) -> None:
        """The process ends: the last figures, and the exception that ends it (an OOM's step and memory)."""
        st = self.current()
        if (st.step or st.pending_n) and not st.ended:
            self.send_step(st, final=True)
        st.ended = True
        if error is not None:
            st.channel.send({R.KIND: R.EXIT, R.ERROR: f"{type(error).__name__}: {str(error)[:300]}",
                             R.AT: st.step, R.MEM: self.memory()})


class _NoOptimizer:
    """The optimizer of a hand-written update: no param groups, no lr."""

    param_groups: list[dict[str, Any]] = [{}]


def _last_batch(loader: Any) -> int:
    """The samples of a DataLoader's smaller last batch (0: its last batch is whole, or dropped)."""
    try:
        return 0 if loader.drop_last else len(loader.sampler) % loader.batch_size
    except (AttributeError, TypeError):  # a sampler without a length
        return 0


def _largest_group(groups: list[dict[str, Any]]) -> int:
    """The index of the param group holding the most parameters' elements (the first among equals)."""
    sizes = [sum(getattr(p, "numel", lambda: 0)() for p in g.get("params", ())) for g in groups]
    return sizes.index(max(sizes)) if sizes else 0


def _variable_of(value: Any, frame: Any) -> str:
    """The script's name for VALUE: a variable of the first frame outside the probe and torch holding it
    ("" when none does: `(a + b).backward()`)."""
    while frame is not None and (frame.f_code.co_filename == __file__ or _in_torch(frame.f_code.co_filename)):
        frame = frame.f_back
    if frame is None:
        return ""
    return next((k for k, v in list(frame.f_locals.items()) if v is value and not k.startswith("_")), "")


def _in_torch(path: str) -> bool:
    return f"{os.sep}torch{os.sep}" in path


def _labels(every: list[Stepper], stepped: list[Stepper]) -> list[str]:
    """The names of STEPPED's losses: the script's loss variable where it says loss (`loss_D`, `g_loss`),
    else the optimizer's (`optimizerD` -> `loss_D`), else the loss variable's (`loss_errG`), else its
    place among the optimizers (`loss_2`); never two alike."""
    taken: dict[Stepper, str] = {}
    for index, opt in enumerate(every, 1):
        label = _label(opt, index)
        taken[opt] = label if label not in taken.values() else f"{label}_{index}"
    return [taken[opt] for opt in stepped]


def _label(opt: Stepper, index: int) -> str:
    names = [n for n in dict.fromkeys(opt.names) if n]
    common = names[0] if len(names) == 1 else os.path.commonprefix(names).rstrip("_")
    if "loss" in common.lower():
        return common
    var = opt.var
    for word in OPTIMIZER_WORDS:  # (longest first)
        var = var.replace(word, "").replace(word.capitalize(), "").replace(word.upper(), "")
    var = var.strip("_")
    if var:
        return f"loss_{var}"
    return f"loss_{common}" if common else f"loss_{index}"


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
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.utils.data import dataloader as data

    register_optimizer_step_post_hook(probe.on_step)
    begins = register_optimizer_step_pre_hook(lambda *a: _quiet(probe.on_first_step, begins))
    for owner, attribute, before, after in (
            (torch.Tensor, "backward", probe.on_backward, None),
            (data.DataLoader, "__iter__", None, probe.on_loader),
            (data._BaseDataLoaderIter, "__next__", None, probe.on_batch),
            (torch.nn.Module, "train", probe.on_mode, None),
            (getattr(getattr(torch, "amp", None), "GradScaler", None), "scale", None,
             lambda self, scaled, outputs: _scaled(probe, self, scaled, outputs)),
            (sys, "excepthook", lambda kind, error, tb: probe.on_exit(error), None)):
        _wrap(owner, attribute, before, after)
    for key, stream in (("o", sys.stdout), ("e", sys.stderr)):
        _wrap(stream, "write", lambda text, key=key: isinstance(text, str) and probe.on_text(key, text), None)
    atexit.register(probe.on_exit)
    os.register_at_fork(after_in_child=lambda: _quiet(probe.forked))
    return probe


def _scaled(probe: Probe, scaler: Any, scaled: Any, outputs: Any) -> None:
    """GradScaler.scale's output: its backward's loss is the unscaled one."""
    factor = getattr(scaler, "_scale", None)
    if scaled is not outputs and factor is not None and getattr(scaled, "numel", lambda: 0)() == 1:
        probe.state.scaled = (id(scaled), factor)


def _quiet(hook: Any, *args: Any) -> None:
    """Call a probe hook; an error of ours never reaches the script."""
    try:
        hook(*args)
    except Exception:  # noqa: BLE001, S110 - measuring is best effort, the script is not
        pass


def _wrap(owner: Any, attribute: str, before: Any, after: Any) -> None:
    """OWNER.ATTRIBUTE calls BEFORE with its arguments, or AFTER with the instance, its result and its
    arguments (`after(self, result, *args)`); an error of the probe's never reaches the script, and an
    owner that takes no attribute (a stream's C type) is left as it is."""
    original = getattr(owner, attribute, None)
    if original is None:
        return

    def probed(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            try:
                before(*args, **kwargs)
            except Exception:  # noqa: BLE001, S110 - measuring is best effort, the script is not
                pass
        result = original(*args, **kwargs)
        if after is not None:
            try:
                after(args[0], result, *args[1:])
            except Exception:  # noqa: BLE001, S110
                pass
        return result

    probed.__wrapped__ = original  # type: ignore[attr-defined]
    probed.__doc__ = getattr(original, "__doc__", None)
    try:
        setattr(owner, attribute, probed)
    except (AttributeError, TypeError):
        pass  # a stream that takes no attribute: its lines are read as text


#: The in-place updates of a hand-written step (`w -= lr * w.grad`, `p.data.add_(-lr, p.grad)`).
UPDATES = ("__isub__", "__iadd__", "sub_", "add_")


def _watch_updates(probe: Probe, torch: Any) -> None:
    """Each in-place add/sub tells the probe (until an optimizer steps)."""
    for attribute in UPDATES:
        _wrap(torch.Tensor, attribute, probe.on_update, None)


def _unwatch_updates(torch: Any) -> None:
    for attribute in UPDATES:
        method = getattr(torch.Tensor, attribute)
        original = getattr(method, "__wrapped__", None)
        if original is not None:
            setattr(torch.Tensor, attribute, original)
