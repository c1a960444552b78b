"""The setup pane: the run config's main fields, checked as you type with the CLI's own validation.

ctrl+t switches to the script form (a training script, its arguments, nproc, devices): the twin of
`trainconsole run --script`. A loaded TOML with a `[script] path` opens in it. It owns `o` and `w` (bound on
the dashboard, whose footer and `?` show them): it asks for a path (`AskLine`), proposing the file it was
loaded from (never a shipped example), and posts `LoadAsked` or `SaveAsked`; the dashboard reads or writes.
"""

from __future__ import annotations

import copy
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Static

from trainconsole.console import demos
from trainconsole.console.widgets.ask_line import AskLine
from trainconsole.protocol import SCHEMA, Config, ConfigError, apply_override, validate
from trainconsole.protocol.config_values import BUILTIN_DATASETS, BUILTIN_MODELS


@dataclass(frozen=True)
class FormField:
    """One input of the form: a config key, its label, and its placeholder and completions (a key with
    choices in the schema takes both from there)."""

    section: str
    key: str
    label: str
    hint: str = ""
    suggest: tuple[str, ...] = ()

    @property
    def choices(self) -> tuple[str, ...]:
        """What the input completes to: the schema's choices, else `suggest`."""
        return tuple(map(str, SCHEMA[self.section][self.key].choices)) or self.suggest

    @property
    def placeholder(self) -> str:
        """The hint, or the choices when the key has some."""
        return self.hint or " ".join(self.choices)

    @property
    def id(self) -> str:
        """The DOM id of its input."""
        return field_id(self.section, self.key)


FIELDS: tuple[FormField, ...] = (
    FormField("model", "name", "model", "small_cnn, resnet18, pkg.module:factory",
              (*BUILTIN_MODELS, "resnet18")),
    FormField("data", "name", "dataset", suggest=BUILTIN_DATASETS),
    FormField("strategy", "name", "strategy"),
    FormField("strategy", "devices", "devices", "auto, a count, or [0, 1]", ("auto",)),
    FormField("train", "batch_size", "batch size", "samples per step"),
    FormField("train", "lr", "lr", "learning rate"),
    FormField("train", "epochs", "epochs", "passes over the data"),
    FormField("train", "optimizer", "optimizer"),
    FormField("train", "precision", "precision"),
)


#: The script form: a run of kind `script` (devices is shared with the config form).
SCRIPT_FIELDS: tuple[FormField, ...] = (
    FormField("script", "path", "script", "train.py: a path from where the console started"),
    FormField("script", "args", "arguments", "its arguments, e.g. --epochs 5 --lr 0.1"),
    FormField("script", "nproc", "nproc", "0 = python; N = torchrun with N processes"),
    FormField("script", "python", "python", "empty: the active environment's python, else trainconsole's"),
)
SHARED = (("strategy", "devices"),)
#: The configs shipped with trainconsole: `w` never proposes to overwrite one.
EXAMPLES = demos.FOLDER.resolve()


def field_id(section: str, key: str) -> str:
    """The DOM id of a field's input."""
    return f"{section}-{key}"


class RunForm(VerticalScroll):
    """A form over a config: edits the fields above, keeps every other key of the loaded config."""

    BINDINGS = [Binding("ctrl+t", "toggle_script", "Script / config form", show=False)]

    @dataclass
    class Submitted(Message):
        """Enter was pressed in a field and the whole config is valid."""

        config: Config

    @dataclass
    class LoadAsked(Message):
        """`o` answered: load the config TOML at `path` into the form."""

        path: str

    @dataclass
    class SaveAsked(Message):
        """`w` answered: save the form's (valid) config as TOML at `path`."""

        path: str
        config: Config

    def __init__(self, config: Config, source: str, *, path: str = "", id: str | None = None,
                 classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.base, self.source = copy.deepcopy(config), source
        self.path = path  # the file the form was loaded from (or last saved to): `o` and `w` propose it
        self.script_mode = bool(config.get("script", {}).get("path"))

    @property
    def tune_mode(self) -> bool:
        """A tune config was loaded: the fields are the trials' base config, launch starts the search."""
        return "tune" in self.base and not self.script_mode

    @property
    def fields(self) -> tuple[FormField, ...]:
        """The fields of the form now shown: the config's, or the script's and devices."""
        if not self.script_mode:
            return FIELDS
        return SCRIPT_FIELDS + tuple(f for f in FIELDS if (f.section, f.key) in SHARED)

    def compose(self) -> ComposeResult:
        """A labelled input and an error line per field."""
        yield Static(self._source_text(), id="form-source")
        for f in FIELDS + SCRIPT_FIELDS:
            with Horizontal(classes="field", id=f"row-{f.id}"):
                yield Label(f.label, classes="field-label")
                suggester = SuggestFromList(f.choices, case_sensitive=False) if f.choices else None
                yield Input(_field_text(self.base, f.section, f.key), placeholder=f.placeholder, id=f.id,
                            compact=True, suggester=suggester)
            yield Label("", id=f"{f.id}-error", classes="field-error")
        yield Label("", id="form-error", classes="field-error")
        keys = "[b]enter[/b] launch   [b]esc[/b] leave the form, then [b]o[/b] load / [b]w[/b] save TOML"
        yield Static(keys, id="form-keys")

    def on_mount(self) -> None:
        """Show the rows of the current mode."""
        self._show_rows()

    def action_toggle_script(self) -> None:
        """Switch between the config form and the script form."""
        self.script_mode = not self.script_mode
        self.query_one("#form-source", Static).update(self._source_text())  # a script is no search
        self._show_rows()
        self.check()
        self.query_one(f"#{self.fields[0].id}", Input).focus()

    def _show_rows(self) -> None:
        shown = {f.id for f in self.fields}
        for f in FIELDS + SCRIPT_FIELDS:
            self.query_one(f"#row-{f.id}").display = f.id in shown
            if f.id not in shown:
                self.query_one(f"#{f.id}-error", Label).display = False

    def load(self, config: Config, source: str, path: str | None = None) -> None:
        """Fill the form from a (validated) config; `path`: the file it came from (`o` and `w` propose it)."""
        self.base, self.source = copy.deepcopy(config), source
        self.path = self.path if path is None else path
        self.script_mode = bool(config.get("script", {}).get("path"))
        self.query_one("#form-source", Static).update(self._source_text())
        for f in FIELDS + SCRIPT_FIELDS:
            self.query_one(f"#{f.id}", Input).value = _field_text(config, f.section, f.key)
        self._show_rows()
        self.check()

    def edit(self, config: Config, source: str, differs: list[str]) -> None:
        """Fill the form from a run's config, its `differs` keys highlighted, the first of them focused."""
        self.load(config, source)
        shown = self.highlight_differing(differs)
        if shown:
            self.query_one(f"#{shown[0]}").focus()

    def focus_first(self) -> None:
        """Put the cursor in the form's first field."""
        self.query(Input).first().focus()

    def ask_load(self) -> None:
        """`o`: ask for a config TOML (proposing the form's file), then post `LoadAsked`."""
        def answer(path: str | None) -> None:
            if path:
                self.post_message(self.LoadAsked(path))

        self.post_message(AskLine("Load a run or tune config (TOML):", self.path, answer))

    def ask_save(self) -> None:
        """`w`: ask where to save the form's config (once it is valid), then post `SaveAsked`."""
        if self.check() is None:
            self.notify("fix the config first: see the setup pane", severity="error")
            return

        def answer(path: str | None) -> None:
            config = self.check()
            if path and config is not None:
                self.post_message(self.SaveAsked(path, config))

        self.post_message(AskLine("Save the config as:", save_proposal(self.path), answer))

    def _source_text(self) -> str:
        tune = self.base.get("tune") if self.tune_mode else None
        if not tune:
            return f"from {self.source}"
        return (f"tune: {tune['search']}, {tune['num_samples']} trial(s), {tune['mode']} {tune['metric']}"
                f", {len(tune['space'])} key(s) searched\nfrom {self.source}")

    def raw(self) -> dict[str, Any]:
        """The loaded config with the form's fields applied (not yet validated)."""
        raw = copy.deepcopy(self.base)
        for f in self.fields:
            section, key = f.section, f.key
            text = self.query_one(f"#{f.id}", Input).value
            if (section, key) == ("script", "args"):
                raw.setdefault("script", {})["args"] = _split(text)
            elif (section, key) == ("script", "path"):
                raw.setdefault("script", {})["path"] = os.path.abspath(text.strip()) if text.strip() else ""
            else:
                apply_override(raw, f"{section}.{key}={text}")
        if not self.script_mode and isinstance(raw.get("script"), dict):
            raw["script"]["path"] = ""  # the config form launches a built-in run
        return raw

    def check(self) -> Config | None:
        """Validate; show each problem next to its field. Returns the config if it is valid."""
        raw, errors = self.raw(), {}
        for f in self.fields:
            try:
                validate({f.section: {f.key: raw[f.section][f.key]}})
            except ConfigError as e:
                errors[e.field] = str(e).removeprefix(f"{e.field}: ")
        if self.script_mode and not raw["script"]["path"]:
            errors["script.path"] = "is required: the training script to run"
        config, whole = None, ""
        if not errors:
            try:
                config = _validate_tune(raw) if self.tune_mode else validate(raw)
            except ConfigError as e:
                errors[e.field] = whole = str(e)
        for f in self.fields:
            message = errors.get(f"{f.section}.{f.key}", "")
            self.query_one(f"#{f.id}-error", Label).update(message)
            self.query_one(f"#{f.id}-error", Label).display = bool(message)
            self.query_one(f"#{f.id}", Input).set_class(bool(message), "-invalid")
        shown = whole and whole.split(":")[0] not in {f"{f.section}.{f.key}" for f in self.fields}
        self.query_one("#form-error", Label).update(whole if shown else "")
        self.query_one("#form-error", Label).display = bool(shown)
        return config

    def first_error(self) -> Input | None:
        """The first field with a problem, to focus it."""
        return next(iter(self.query("Input.-invalid").results(Input)), None)

    def focus_first_error(self) -> None:
        """Put the cursor in the first field with a problem (if one has)."""
        bad = self.first_error()
        if bad is not None:
            bad.focus()

    def highlight_differing(self, keys: list[str]) -> list[str]:
        """Highlight the rows of these `section.key`s (the compare view's differing keys) and no others;
        returns the ids of the fields highlighted (those the form has)."""
        for row in self.query(".field"):
            row.remove_class("-differs")
        fields = [field_id(*key.split(".", 1)) for key in keys if "." in key]
        shown = [f for f in fields if self.query(f"#row-{f}")]
        for fid in shown:
            self.query_one(f"#row-{fid}").add_class("-differs")
        return shown

    def on_input_changed(self, event: Input.Changed) -> None:
        """Re-check on every edit."""
        event.stop()
        self.check()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in any field submits the form if the config is valid."""
        event.stop()
        config = self.check()
        if config is not None:
            self.post_message(self.Submitted(config))


def save_proposal(path: str) -> str:
    """Where `w` proposes to save the form: the file it was loaded from, unless that is a shipped example
    (then a file of the same name in the working directory, or `NAME-mine.toml` beside it if that is one)."""
    target = Path(path).expanduser().resolve()
    if not target.is_relative_to(EXAMPLES):
        return path
    here = Path.cwd() / target.name
    if here.resolve().is_relative_to(EXAMPLES) or here.resolve() == target:
        here = Path.cwd() / f"{target.stem}-mine.toml"
    return str(here)


def _validate_tune(raw: dict[str, Any]) -> Config:
    from trainconsole.protocol.tune_config import validate_tune  # only once a tune TOML is loaded

    return validate_tune(raw)


def _split(text: str) -> list[str] | str:
    """Arguments as a shell would split them (the text itself when its quotes do not close)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text


def _field_text(config: dict[str, Any], section: str, key: str) -> str:
    value = config.get(section, {}).get(key, "")
    if (section, key) == ("script", "args") and isinstance(value, list):
        return shlex.join(value)
    return _text(value)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)
